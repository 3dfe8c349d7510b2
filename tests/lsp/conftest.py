"""LSP tests need the `lsp` extra and pytest-lsp (both in `dev`); without them they are not collected."""

try:
    from tests.lsp.client import lsp_client, session, shared, shared_client  # noqa: F401 (fixtures)
except ImportError:  # pygls, lsprotocol or pytest-lsp missing
    collect_ignore_glob = ["test_*.py"]

"""`graphsafe lsp`: the language server (pygls + lsprotocol over stdio).

A thin layer over the engine, one job per module:

- `convert`  graphsafe's plain data ↔ LSP objects (positions in the client's encoding, diagnostics, edits);
- `actions`  code actions: quick fixes, `# noqa` edits, `source.fixAll.graphsafe` in rounds;
- `hover`    the rule documentation under the cursor;
- `settings` `[tool.graphsafe]` for a workspace folder, config errors as messages;
- `index`    facts of every workspace file, computed off the editor's critical path;
- `workspace` the state one worker thread owns: projects, indexed facts, open buffers, results;
- `worker`   that single worker thread, handing results back to the event loop;
- `isolation` a child process per big or deeply nested buffer, so libcst's native parse holds neither;
- `framing`  message frames from stdin, resynchronised after a malformed one;
- `protocol` pygls' protocol answering every request once (bad params, after shutdown, bad frames);
- `server`   pygls wiring, debouncing, publishing, `main()`.

Nothing here imports torch, and nothing writes to stdout except the protocol.
"""

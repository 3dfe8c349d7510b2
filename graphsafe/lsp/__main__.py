"""`python -m graphsafe.lsp`: the language server without the `graphsafe` command line."""

import sys

from graphsafe.lsp.server import main

if __name__ == "__main__":
    sys.exit(main())

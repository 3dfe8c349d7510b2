from graphsafe.cli import main

raise SystemExit(main())

from advisor.cli.main import main

raise SystemExit(main())

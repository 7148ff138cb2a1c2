from readdod.cli import main

raise SystemExit(main())

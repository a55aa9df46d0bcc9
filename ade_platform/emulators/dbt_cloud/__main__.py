from ade_platform.emulators.dbt_cloud.server import main

raise SystemExit(main())

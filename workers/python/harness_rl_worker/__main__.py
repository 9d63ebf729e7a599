"""`python -m harness_rl_worker`: one worker process (see worker.main)."""

from .worker import main

raise SystemExit(main())

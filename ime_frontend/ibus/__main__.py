import sys

from ime_frontend.ibus.main import main

sys.exit(main())

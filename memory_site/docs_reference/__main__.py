import sys

from memory_site.docs_reference import main

sys.exit(main())

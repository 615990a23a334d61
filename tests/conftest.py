import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
pytest_plugins = ["pgserver"]      # the PostgreSQL cluster and the store_url fixture of the store tests

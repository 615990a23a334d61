"""Diagnose out-of-memory (and look-alike) failures from runtime logs.

``kb`` loads the errors knowledge base shipped in ``runlocal/data/errors``; ``extract`` pulls the
figures a log states; ``classify`` streams a log and names the failure; ``fixes`` (used by the CLI
and the API) turns the figures into concrete commands.
"""

from .classify import Diagnosis
from .extract import Extractor, parse_logged_size
from .kb import Entry, load_entries, search
from .reading import diagnose_file, diagnose_lines, diagnose_text

__all__ = ["Diagnosis", "Entry", "Extractor", "diagnose_file", "diagnose_lines", "diagnose_text",
           "load_entries", "parse_logged_size", "search"]

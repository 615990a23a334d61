"""runlocal: will this LLM run here, and if not, what to change."""

__version__ = "0.1.0"

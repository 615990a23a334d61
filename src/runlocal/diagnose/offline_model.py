"""Whether a model a log names can be resolved without the network (diagnosing a log must never wait on the Hub).

Split from diagnose/fixes.py (session 17) so that the modules computing fixes from a log's figures (fixes.py,
vllm_budget.py) share it without importing each other.
"""

from __future__ import annotations


def resolvable_offline(model: str, policy=None) -> bool:
    """Whether ``model`` resolves without the network: a local file or folder ``policy`` may read (model/policy.py;
    a server's reads none outside its allowed folder, and does not even look a path up), a catalog name or repo id,
    or a repo whose config.json is already in the Hugging Face cache. Diagnosing a log must never wait on
    the Hub."""
    from ..errors import InputError
    from ..model.policy import ReadPolicy

    model = model.strip().strip("'\"")
    if not model:
        return False
    try:
        if (policy or ReadPolicy()).local_path(model) is not None:
            return True
    except (InputError, OSError, RuntimeError):       # a path the policy refuses; "~nobody/…"
        return False
    from ..model import catalog

    if catalog.find_entry(model) is not None:
        return True
    if model.count("/") != 1 or model.startswith(("/", ".", "~")):
        return False
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency
        return False
    try:
        return isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # an invalid repo id
        return False

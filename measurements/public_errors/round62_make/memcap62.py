"""The memory cap a scenario puts on itself: RLIMIT_AS (the address space), set to what the process has mapped now
plus a headroom, so the cap bites on what comes next (a model's buffers, a long prompt) and never lets one scenario
take more than the headroom (at most 1.5 GiB) on the shared machine."""
import resource


def mapped_bytes(pid: str = "self") -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def cap_address_space(headroom_mib: int) -> None:
    assert 0 < headroom_mib <= 1536
    limit = mapped_bytes() + headroom_mib * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

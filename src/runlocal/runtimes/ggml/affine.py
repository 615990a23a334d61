"""One graph shape for every context: the reserved graphs built and scheduled once with the cells attended (n_kv) as
a symbol, n_kv = r + STEP·m; ggml-alloc's walk recorded and replayed per context, or answered by an exact piece.

Why it is exact. For a fixed graph shape (model, ubatch, flash attention, cache types, streams, output cap; the
placement is scheduled per shape) n_kv enters the builders and the scheduler only as a number: shapes, strides and
sizes are sums and products of it with constants (src/llama-graph.cpp: the KQ mask is [n_kv, n_tokens], the cache
views span n_kv cells, KQ is [n_kv, n_tokens, n_head]), and every decision they take on it is a comparison of two
such numbers. Built with n_kv as ``Aff(r, STEP)`` (a + b·m) at a context asked (x0), each comparison is answered as
it is at x0 and narrows the interval [lo, hi] of m to where it is answered the same way (an affine difference changes
sign once), so the graph and its schedule are, node for node, the ones a concrete build at r + STEP·m gives, for
every m in [lo, hi]. A later context in that interval reuses them. ggml-alloc's walk is recorded (alloc.Program: its
calls on the allocator, which are structural) and replayed with each context's sizes: its best-fit choices, merges
and max do change with n_kv — session 8 measured deepseek-v3 -ngl 50 falling 3,226.5 → 3,200.8 MiB from 6,144 to
6,400 cells — so the walk's outcome is never assumed. Where a piece is likely to serve (a search closing in, or a walk
whose last piece was wide), the replay runs with symbolic sizes: best fit narrows to where the same block is chosen
(best_fit), and the result is an affine formula exact on its interval (Shape.walk). Where the arithmetic is not
affine (a product of two symbols, a division or remainder whose divisor does not divide the slope, a symbol used as
an int: range(), an index) NotAffine is raised and the context is simulated concretely. llama.cpp pads the KV cache
to 256 cells (src/llama-context.cpp GGML_PAD(n_ctx_seq, 256)), so STEP = 256 keeps slopes multiples of the alignments
and block sizes met (32, 128, 256): a ceil to an alignment stays affine within the residue class r. A shape asked at
one context only is simulated as before (Shapes.run). Pure computation; the interval is per thread (the API plans on
several threads), each shape one query at a time."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

STEP = 256           # llama.cpp's KV padding (src/llama-context.cpp, runtimes/llamacpp_layout.py CTX_PAD)
TOP = 1 << 40        # cells: no interval reaches past this


class NotAffine(Exception):
    """The simulation did something with n_kv that is not affine (or not a comparison): simulate concretely."""


class Domain:
    """The point asked for (x0) and the interval of m where every comparison so far is answered as at x0."""

    __slots__ = ("x0", "lo", "hi")

    def __init__(self, x0: int, lo: int, hi: int) -> None:
        self.x0, self.lo, self.hi = x0, lo, hi


_state = threading.local()


def domain() -> Domain | None:
    """The interval comparisons of symbols narrow on this thread now, if any."""
    return getattr(_state, "domain", None)


def _sign(d: Aff | int) -> int:
    """The sign of d at x0, narrowing the interval to where d keeps that sign (d(m) = a + b·m crosses 0 once)."""
    if type(d) is int:
        return (d > 0) - (d < 0)
    dom = domain()
    if dom is None:
        raise NotAffine("a symbolic size compared outside a symbolic run")
    a, b = d.a, d.b     # type: ignore[union-attr]
    v = a + b * dom.x0
    if v == 0:
        dom.lo = dom.hi = dom.x0
        return 0
    if (v > 0) == (b > 0):       # the sign holds for m > -a/b
        lo = (-a) // b + 1
        if lo > dom.lo:
            dom.lo = lo
    else:                         # for m < -a/b
        hi = -(a // b) - 1
        if hi < dom.hi:
            dom.hi = hi
    return 1 if v > 0 else -1


def _is_zero(d: Aff | int) -> bool:
    """d == 0 at x0, narrowing only where it must: an affine d ≠ 0 whose root is not an integer is never 0."""
    if type(d) is int:
        return d == 0
    dom = domain()
    if dom is None:
        raise NotAffine("a symbolic size compared outside a symbolic run")
    a, b = d.a, d.b     # type: ignore[union-attr]
    if a % b:
        return False
    return _sign(d) == 0


INF = 1 << 80


def _where(d: Aff | int, strict: bool) -> tuple[int, int]:
    """The interval of m where d(m) > 0 (strict) or d(m) ≥ 0, as (lo, hi); empty where lo > hi."""
    if type(d) is int:
        return (-INF, INF) if (d > 0 or (d == 0 and not strict)) else (INF, -INF)
    a, b = d.a, d.b     # type: ignore[union-attr]
    if b > 0:
        return ((-a) // b + 1 if strict else -(a // b)), INF
    return -INF, (-(a // b) - 1 if strict else (-a) // b)


def _below(d: Aff | int) -> tuple[int, int]:
    """Where d(m) < 0: the complement of d ≥ 0 (a half-line's complement is a half-line)."""
    lo, hi = _where(d, False)
    if lo > hi:
        return -INF, INF
    if lo == -INF and hi == INF:
        return INF, -INF
    return (-INF, lo - 1) if lo != -INF else (hi + 1, INF)


def _either(x0: int, one: tuple[int, int], other: tuple[int, int]) -> tuple[int, int]:
    """The stretch of one ∪ other around x0 (x0 lies in one of them)."""
    (a, b), (c, d) = one, other
    ins = [iv for iv in (one, other) if iv[0] <= x0 <= iv[1]]
    assert ins, "x0 outside both"
    if a <= b and c <= d and a <= d + 1 and c <= b + 1:
        return min(a, c), max(b, d)
    return ins[0]


def _narrow(iv: tuple[int, int]) -> None:
    dom = domain()
    assert dom is not None
    if iv[0] > dom.lo:
        dom.lo = iv[0]
    if iv[1] < dom.hi:
        dom.hi = iv[1]


def best_fit(sizes: list, size: Aff | int) -> int:
    """ggml-alloc.c ggml_dyn_tallocr_alloc's choice among the free blocks but the last (``sizes``): the smallest
    that fits, the later one on ties, -1 where none fits. The interval is narrowed to where the same block is
    chosen, which is weaker than every block's fits-or-not staying the same: a block that is not chosen only has
    to stay either too small or no better."""
    dom = domain()
    assert dom is not None
    x0 = dom.x0

    def at(v: Aff | int) -> int:
        return v if type(v) is int else v.at(x0)  # type: ignore[union-attr]

    s0 = at(size)
    best, best0 = -1, None
    for i, bs in enumerate(sizes):
        b0 = at(bs)
        if b0 >= s0 and (best0 is None or b0 <= best0):
            best, best0 = i, b0
    if best < 0:
        for bs in sizes:
            _narrow(_below(bs - size))                  # still too small
        return -1
    chosen = sizes[best]
    _narrow(_where(chosen - size, False))               # still fits
    for i, bs in enumerate(sizes):
        if i != best:
            # too small, or no better (an earlier block loses ties, a later one must be strictly larger)
            _narrow(_either(x0, _below(bs - size), _where(bs - chosen, i > best)))
    return best


def _mk(a: int, b: int) -> Aff | int:
    return a if b == 0 else Aff(a, b)


make = _mk      # a + b·m (a plain int where b is 0)


def coefficients(v: Aff | int) -> tuple[int, int]:
    """(a, b) of a + b·m."""
    return (v, 0) if type(v) is int else (v.a, v.b)  # type: ignore[union-attr]


class Aff:
    """a + b·m, b ≠ 0 (a constant is a plain int)."""

    __slots__ = ("a", "b")

    def __init__(self, a: int, b: int) -> None:
        self.a, self.b = a, b

    def at(self, m: int) -> int:
        return self.a + self.b * m

    def __repr__(self) -> str:
        return f"Aff({self.a} + {self.b}·m)"

    # --- arithmetic ------------------------------------------------------------------------------------
    def __add__(self, o: Any) -> Aff | int:
        if type(o) is int:
            return Aff(self.a + o, self.b)
        if type(o) is Aff:
            return _mk(self.a + o.a, self.b + o.b)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, o: Any) -> Aff | int:
        if type(o) is int:
            return Aff(self.a - o, self.b)
        if type(o) is Aff:
            return _mk(self.a - o.a, self.b - o.b)
        return NotImplemented

    def __rsub__(self, o: Any) -> Aff | int:
        if type(o) is int:
            return Aff(o - self.a, -self.b)
        return NotImplemented

    def __neg__(self) -> Aff:
        return Aff(-self.a, -self.b)

    def __mul__(self, o: Any) -> Aff | int:
        if type(o) is int:
            return _mk(self.a * o, self.b * o)
        if type(o) is Aff:
            raise NotAffine("a product of two sizes that both grow with n_kv")
        return NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> Aff | int:
        # floor((a + b·m) / o) = floor(a / o) + (b / o)·m exactly when o divides b
        if type(o) is int and o != 0 and self.b % o == 0:
            return _mk(self.a // o, self.b // o)
        raise NotAffine(f"{self!r} // {o!r}")

    def __rfloordiv__(self, o: Any) -> Aff | int:
        raise NotAffine(f"{o!r} // {self!r}")

    def __mod__(self, o: Any) -> int:
        if type(o) is int and o != 0 and self.b % o == 0:
            return self.a % o
        raise NotAffine(f"{self!r} % {o!r}")

    def __rmod__(self, o: Any) -> int:
        raise NotAffine(f"{o!r} % {self!r}")

    def _int(self) -> int:
        raise NotAffine(f"{self!r} used as an int")

    __index__ = __int__ = _int

    def __float__(self) -> float:
        raise NotAffine(f"{self!r} used as a float")

    # --- comparisons: answered as at x0, the interval narrowed -------------------------------------------
    def __lt__(self, o: Any) -> bool:
        if type(o) is not int and type(o) is not Aff:
            return NotImplemented
        return _sign(self - o) < 0

    def __le__(self, o: Any) -> bool:
        if type(o) is not int and type(o) is not Aff:
            return NotImplemented
        return _sign(self - o) <= 0

    def __gt__(self, o: Any) -> bool:
        if type(o) is not int and type(o) is not Aff:
            return NotImplemented
        return _sign(self - o) > 0

    def __ge__(self, o: Any) -> bool:
        if type(o) is not int and type(o) is not Aff:
            return NotImplemented
        return _sign(self - o) >= 0

    def __eq__(self, o: Any) -> bool:
        if type(o) is Aff and o.a == self.a and o.b == self.b:
            return True
        if type(o) is not int and type(o) is not Aff:
            return NotImplemented
        if domain() is None:      # (a cache key met outside a run: structural; a constant is never an Aff)
            return False
        return _is_zero(self - o)

    def __ne__(self, o: Any) -> bool:
        eq = self.__eq__(o)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self.a, self.b, "aff"))

    def __bool__(self) -> bool:
        return _sign(self) != 0





def value(v: Any) -> Any:
    """v at the point asked for (a plain int as it is)."""
    if type(v) is Aff:
        dom = domain()
        assert dom is not None
        return v.at(dom.x0)
    return v


def evaluate(v: Any, m: int) -> Any:
    """A result with symbols in it (ints, Affs, in tuples, lists and dicts) at m."""
    if type(v) is Aff:
        return v.at(m)
    if isinstance(v, (tuple, list)):
        return type(v)(evaluate(x, m) for x in v)
    if isinstance(v, dict):
        return {k: evaluate(x, m) for k, x in v.items()}
    return v


class Shape:
    """One graph shape's graphs and schedules, built with n_kv = ``sym``: valid for m in [dom.lo, dom.hi], which
    the builds and schedules narrow (``dom`` is the domain they run under, whatever the query's); and per walk (a
    graph as scheduled for a placement, with its cuts) the pieces its symbolic walks left."""

    # kept (the latest ones). SCHEDULES (schedules, and the walks recorded as programs): a --fit over 4 GPUs asks
    # ~24 placements × 2 graphs per context, and the max-context search revisits them at its next contexts in the
    # same order — past what is kept, least-recently-used keeping misses every one (qwen3-235b-a22b on 4 × RTX 3090:
    # 7.1 → 4.6 CPU s at 128, 5.6 at 96, no gain at 64; peak RSS 171 → 262 MB)
    SCHEDULES, WALKS, PIECES = 128, 64, 16

    def __init__(self, r: int, x0: int) -> None:
        self.r = r
        self.sym = Aff(r, STEP)
        self.dom = Domain(x0, -((r - 1) // STEP), TOP // STEP)     # lo: the least m with r + STEP·m ≥ 1
        self.built: dict = {}         # sched.built_graph's graphs, IdMemo's key
        self.schedules: dict = {}     # sched._placed's splits
        self.walks: dict = {}         # walk key → {"asked": [m …], "pieces": [(lo, hi, result) …], "wide": bool}
        self.programs: dict = {}      # walk key → alloc.Program (walks without cuts)
        self.placement: Any = None    # this query's placement (the key of its schedules)
        self.lock = threading.Lock()
        self.stats = Stats()

    def holds(self, m: int) -> bool:
        return self.dom.lo <= m <= self.dom.hi

    def per_placement(self, what: str, make: Callable[[], Any]) -> Any:
        """make() once per placement (what a placement decides whatever the context: the layers' kinds)."""
        k = (what, self.placement)
        got = self.schedules.get(k)
        if got is None:
            got = self.schedules[k] = make()
        return got

    def get(self, obj: Any, key: Any, make: Callable[[], Any]) -> Any:
        """IdMemo.get over this shape's graphs (built under the shape's domain)."""
        k = (id(obj), key)
        got = self.built.get(k)
        if got is None:
            with self.structure():
                got = self.built[k] = (obj, make())
        return got[1]

    def structure(self) -> _Under:
        """Comparisons made while building or scheduling narrow the shape's own interval."""
        return _Under(self.dom)

    def walk(self, key: Any, run: Callable[[bool], Any]) -> Any:
        """A walk's result at the point asked for: from a piece holding it, else run(symbolic) — symbolic (sizes
        as symbols, the result a piece exact where the walk's comparisons hold) where a piece is likely to serve
        again: near a context this walk was asked before (a search closing in), or its last piece spanned a
        factor of two (a walk whose choices n_kv barely moves: often the one-token graph's); else with plain sizes
        (a symbolic replay costs about two plain ones)."""
        m = self.dom.x0
        w = self.walks.pop(key, None) or {"asked": [], "pieces": [], "wide": None}
        self.walks[key] = w
        while len(self.walks) > self.WALKS:
            del self.walks[next(iter(self.walks))]
        for lo, hi, result in w["pieces"]:
            if lo <= m <= hi:
                self.stats.from_pieces += 1
                return evaluate(result, m)
        symbolic = bool(w["wide"]) or any(abs(m - a) <= NEAR * max(m, a) for a in w["asked"])
        w["asked"] = [*w["asked"][-7:], m]
        if not symbolic:
            self.stats.walks += 1
            return run(False)
        query = Domain(m, self.dom.lo, self.dom.hi)
        with _Under(query):
            result = run(True)
        lo, hi = max(query.lo, self.dom.lo), min(query.hi, self.dom.hi)
        assert lo <= m <= hi
        w["pieces"] = [*w["pieces"][1 - self.PIECES:], (lo, hi, result)]
        w["wide"] = hi + 1 >= 2 * max(lo, 1)
        self.stats.symbolic += 1
        return evaluate(result, m)


class Stats:
    """Figures for tests and benchmarks: walks with plain sizes, symbolic walks, walks answered by a piece."""

    def __init__(self) -> None:
        self.walks = self.symbolic = self.from_pieces = 0


class _Under:
    """Run a block under another domain (the previous one back after it)."""

    def __init__(self, dom: Domain | None) -> None:
        self.dom = dom

    def __enter__(self) -> None:
        self.saved = domain()
        _state.domain = self.dom

    def __exit__(self, *exc: object) -> None:
        _state.domain = self.saved


def under(dom: Domain) -> _Under:
    """Comparisons made in the block narrow ``dom``."""
    return _Under(dom)


def shape() -> Shape | None:
    """The shape being asked for on this thread (None: a concrete simulation)."""
    return getattr(_state, "shape", None)


def walking() -> bool:
    """Whether ggml-alloc's walk now runs with symbolic sizes (its best fit narrows the query's interval)."""
    return getattr(_state, "walking", False)


class symbolic_walk:
    """A walk with symbolic sizes (alloc.allocate picks the allocator that narrows by the block chosen)."""

    def __enter__(self) -> None:
        _state.walking = True

    def __exit__(self, *exc: object) -> None:
        _state.walking = False


def at_point() -> _Under:
    """Comparisons answered at the point asked for and forgotten (a walk with plain sizes)."""
    dom = domain()
    return _Under(None if dom is None else Domain(dom.x0, dom.lo, dom.hi))


NEAR = 0.25      # a query within this share of an earlier one of its shape walks symbolically (a search closing in)


class Shapes:
    """Per model and graph shape (the arguments that decide the graphs: all but n_kv and the placement): the Shape
    objects made so far (shared by every placement, as sched.built_graph shares a graph), or that the shape is not
    affine. Shapes of one key may overlap; each is exact where it claims."""

    MAX_SHAPES = 4     # per key; a Shape keeps its graphs, its schedules and its walks

    def __init__(self, size: int = 16) -> None:
        from ...memo import IdMemo

        self._memo = IdMemo(size)
        self._lock = threading.Lock()
        self.made = 0          # Shape objects made
        self.stats = Stats()   # (the walks of every shape made)
        self.fallbacks: list[str] = []       # why a context was simulated concretely (the latest few)

    def run(self, model: Any, key: Any, placement: Any, n_kv: int, simulate: Callable[[Aff | int], Any],
            from_first: bool = False) -> Any:
        """simulate(n_kv) for the concrete n_kv, with the graphs and schedules (and the walks' pieces) of a Shape
        holding it (a new one where none does), else (the shape is not affine) the concrete simulation.
        ``from_first``: the caller will ask other contexts (the page's curve): make the shape at the first one."""
        entry: dict = self._memo.get(model, key, lambda: {"shapes": [], "not_affine": False, "first": n_kv})
        if entry["not_affine"] or domain() is not None or (entry["first"] == n_kv and not from_first):
            # (a shape asked at one context only is simulated as before: building it with a symbol would cost
            # a little more, for nothing)
            return simulate(n_kv)
        entry["first"] = None
        r, m = n_kv % STEP, n_kv // STEP
        with self._lock:
            sh = next((s for s in entry["shapes"] if s.r == r and s.holds(m)), None)
        new = sh is None or not sh.lock.acquire(blocking=False)
        if new:
            sh = Shape(r, m)
            sh.stats = self.stats
            sh.lock.acquire()
            self.made += 1
        assert sh is not None
        try:
            sh.placement = placement
            sh.dom.x0 = m
            _state.domain, _state.shape = Domain(m, sh.dom.lo, sh.dom.hi), sh
            try:
                got = simulate(sh.sym)
            finally:
                _state.domain = _state.shape = None
            if not _plain(got):
                raise NotAffine("a result still holds a symbol")
        except Exception as e:      # NotAffine, or an operation a symbol does not take: the concrete run decides
            with self._lock:
                self.fallbacks = [*self.fallbacks[-7:], repr(e)]
                if new:
                    entry["not_affine"] = True
                else:
                    entry["shapes"] = [s for s in entry["shapes"] if s is not sh]
            return simulate(n_kv)
        finally:
            sh.lock.release()
        if new:
            with self._lock:
                entry["shapes"] = [*entry["shapes"][1 - self.MAX_SHAPES:], sh]
        return got


def _plain(v: Any) -> bool:
    if isinstance(v, (tuple, list)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(_plain(x) for x in v.values())
    return type(v) is not Aff


SHAPES = Shapes()

"""The answer of last resort: whether a line states an error and whether it says memory ran short, read by the
scanner (classify) only while nothing, or only an answer that names the error, has matched. A log that states an
error and says nothing of memory anywhere is an application error that names something else; any word of memory
running short keeps it "unknown". Split from signals.py (session 10) to keep both modules under ~800 lines. Also the
writer's words that contradict an "OOM" they guessed (memory use said low, exit code 137), read by the scanner's
finish."""

from __future__ import annotations

import re

from .signals import needs_more_than_has

__all__ = ["LAST_RESORT_GATE", "free_ram_said", "is_bare_kill", "says_memory_ran_short", "states_error"]

# -- the answer of last resort (classify: only when nothing at all matched): a log that states an error and says
# nothing of memory anywhere is an application error that names something else ("KeyError: 'lm_head.weight'",
# "cannot load", "not holding this lock", a NaN check). Any word of memory running short keeps it "unknown".
_ERROR_STATEMENT = re.compile(
    r"\berror\b|exception|traceback|\bfail(?:ed|s|ure)?\b|\bfatal\b|\bcrash|\bcannot\b|can't|\bunable to\b"
    r"|\bcould(?: not|n't)\b|\bpanic|segmentation|\babort|\boops\b|-?\bnan\b|\binvalid\b"
    r"|\bnot (?:found|holding|loaded|supported|implemented|available|recogni[sz]ed|compatible)\b|\bno model (?:is )?loaded\b"
    # ... and said of the thing refused ("400 codellama:latest does not support tools": Ollama's refusal of a model
    # whose template has no tools, relayed as openai-node's APIError prints it, "${status} ${msg}"; cline/cline#460)
    r"|\b(?:does|do)(?: not|n't) support\b"
    r"|^\W*\w*(?:error|exception|exit)\W*$|\w(?:error|exception):"
    # a name the code looked up and did not find, written without the exception's name ("'TextGenerationPipeline' has
    # no attribute ALLOWED_MODELS", "No module named 'auto_gptq'"): the code and the library it calls disagree
    r"|\bhas no attribute\b|\bno module named\b"
    # a backtrace's frame in an abort function — gdb's "#5 0x… in ggml_abort () from libggml-base.so", glibc's
    # backtrace_symbols "libggml-base.so.0(ggml_abort+0x15b)", "in __GI_abort ()": the program aborted on a check
    # (ggml's GGML_ASSERT and GGML_ABORT both end in ggml_abort, ggml.c), whatever failed (llama.cpp#25191, round 52:
    # an input's buffer left unallocated, its backtrace with no error line). An out-of-memory aborts the same way, but
    # then a line says memory ran short and this answer is not given
    r"|(?:\bin |\()(?:\w*_)?abort\b"
    # a setting that does nothing ("--gpu-memory Not working", "has no effect"): the report is of the setting
    r"|\bnot working\b|\bhas no effect\b|\b(?:does|do)(?: not|n't) (?:work|take effect)\b|\bis (?:being )?ignored\b"
    # the same said in Chinese: 报错 "reports an error", 出错 "goes wrong", 错误(码) "error (code)", 失败 "failed",
    # 异常 "exception"
    r"|报错|出错|错误|失败|异常")
# a Python exception named by its shape wherever it stands, in a title or a sentence, even misspelt ("SyntaxError in
# trainer.py", "RuntimeErrror ipex_duplicate_import_error", "ValueErorr"): a name that ends in an "error"-like word
_EXCEPTION_SHAPE = re.compile(r"[a-z0-9_]e[ro]{3,5}\b")
# Python's TypeError for a call that does not fit the function it calls (a library older or newer than the code
# calling it): "got an unexpected keyword argument 'load_in_4bit'", "missing 1 required positional argument"
_CALL_MISFIT = re.compile(r"unexpected keyword argument|required positional argument"
                          r"|positional arguments? but \d+ (?:were|was) given")
_ERROR_HINTS = ("err", "exception", "traceback", "fail", "fatal", "crash", "cannot", "can't", "unable", "could",
                "panic", "segmentation", "abort", "oops", "nan", "invalid", "not ", "n't support", "no model", "exit", "argument",
                "eror", "no attribute", "module named",  # a misspelt "Error" ("ValueErorr")
                "报错", "出错", "错误", "失败", "异常")
_MEMORY_SAID = re.compile(
    r"out of (?:\w+ )?memory|(?<![a-z0-9_])oom(?![a-z0-9_])"  # "OOM" against any non-ASCII text too
    r"|(?:not enough|insufficient|low on|too much|too little|lack of|run(?:ning)? out of"
    r"|ran out of) (?:\w+ )?(?:memory|ram|vram)\b|\bfit (?:in|into|on) (?:the )?(?:\w+ )?(?:memory|ram|vram)\b"
    r"|(?:cannot|can't|unable to|failed to|could not|couldn't) allocate"
    r"|\balloc\w* (?:failed|error)|memoryerror|bad_alloc|\bkilled\b|exceed\w* (?:the )?(?:\w+ )?(?:memory|ram|vram)\b"
    r"|memory (?:limit|exhausted|pressure|full|leak)"
    r"|requires? ~?[\d.]+\s*[kmgt]i?b (?:of )?(?:\w+ )?(?:memory|ram|vram)\b"  # a size needed in memory
    # Chinese: GPU memory (显存) or memory (内存) insufficient, not enough, overflowing, blown
    r"|(?:显存|内存)(?:不足|不够|溢出|爆)|爆(?:显存|内存)")
_MEMORY_HINTS = ("memor", "oom", "ram", "alloc", "killed", "显存", "内存")
#: one cheap test for "might this line matter to the answer of last resort" (most log lines hold none of these)
LAST_RESORT_GATE = re.compile("|".join(re.escape(w) for w in
                                       _ERROR_HINTS + _MEMORY_HINTS + ("requir", "need", "request", "asked")))


_BARE_KILL = re.compile(r"^\s*killed\s*$")


def is_bare_kill(low: str) -> bool:
    """Whether a lower-cased line is the shell's bare ``Killed``: the process that was printing the log got SIGKILL,
    and the line says nothing of why (a runtime's own "signal: killed" or an exit code 137 are other lines)."""
    return bool(_BARE_KILL.match(low))


def states_error(low: str) -> bool:
    """Whether a lower-cased line states that something failed (an error, an exception, a crash, "cannot …")."""
    if not any(w in low for w in _ERROR_HINTS):
        return False
    return (bool(_ERROR_STATEMENT.search(low))
            or (("rr" in low or "eror" in low) and bool(_EXCEPTION_SHAPE.search(low)))
            or ("argument" in low and bool(_CALL_MISFIT.search(low))))


def says_memory_ran_short(low: str) -> bool:
    """Whether a lower-cased line says, in any words, that memory ran short (or was exceeded, or a process killed)."""
    return (any(w in low for w in _MEMORY_HINTS) and bool(_MEMORY_SAID.search(low))) or needs_more_than_has(low)


# the paste says memory use was low ("the memory and the GPU memory usage is low (12/24GB GPU, 3GB/32GB memory)") and
# the process ended with SIGKILL's 137: an "OOM" said only as that word in the writer's prose is their guess, which
# their own figures contradict; something outside killed it (modelz-llm#69: a health check timed out)
MEMORY_USE_LOW = re.compile(r"(?:memory|ram|vram)\b[^.\n]{0,40}?\b(?:usage|use|used|utili[sz]ation)\b[^.\n]{0,12}?"
                            r"\b(?:is|was|are|were|stays?|stayed|remains?|remained)\s+(?:very |quite |still )?"
                            r"(?:low|normal|fine|ok)\b")
EXIT_137 = re.compile(r"\b137\b[^.\n]{0,20}\b(?:exit|code|status)|\b(?:exit|code|status)\w*[^.\n]{0,20}\b137\b")
# what a program prints when it runs out (a message, not a user's word for it)
PROGRAM_OOM = re.compile(r"out of memory|outofmemory|tried to allocate|alloc|memoryerror|killed process|oom[-_ ]?kill")

# free RAM the writer states in prose ("I have more then 12GByte of free ram", "16 GB RAM free", "free memory: 30 GB"):
# read against the size a host allocation refused (classify: a block that is a small fraction of it is no lack of memory)
_FREE_RAM = re.compile(r"(\d+(?:\.\d+)?)\s*(gb|gib|g|mb|mib)\w*\s+(?:of\s+)?(?:free\s+(?:system\s+)?(?:ram|memory)\b"
                       r"|(?:system\s+)?ram\s+(?:is\s+)?free\b)"
                       r"|\bfree\s+(?:system\s+)?(?:ram|memory)\s*[:=]\s*(\d+(?:\.\d+)?)\s*(gb|gib|g|mb|mib)\b")
_CARD_NAMED = re.compile(r"\bgpu|\bvram\b|\bcuda|\bcard\b|显存")
_UNIT_BYTES = {"gb": 1e9, "gib": 2**30, "g": 2**30, "mb": 1e6, "mib": 2**20}


def free_ram_said(low: str) -> float | None:
    """The free RAM one lower-cased line of prose states, in bytes, or None (None on a line that names a card: "16 GB
    of free memory on the GPU" is the card's)."""
    m = _FREE_RAM.search(low)
    if m is None or _CARD_NAMED.search(low):
        return None
    num, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return float(num) * _UNIT_BYTES[unit]



# -- a Python traceback's error line. CPython prints "Traceback (most recent call last):", then each frame as
# '  File "…", line N, in f' with its source line under it (indented further, with ^~~~ markers since 3.11), then the
# exception's own line, unindented: "qualified.Name: message", or the bare name when the message is empty
# (Lib/traceback.py: TracebackException.format_exception_only, which leaves out the module for builtins and __main__).
# The header names no error; the title of an answer that names the error is that last line (made73-m17: the header
# stood in for "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly …").
TRACEBACK_HEADER = re.compile(r"traceback \(most recent call last\):\s*$")
_FRAME_LINE = re.compile(r'\s*file "')
_MARKERS_ONLY = re.compile(r"[\s^~]+")
# the exception's name: a dotted name whose last part is a class name (an upper-case first letter); a bare name (no
# message) or one with a single capital must end as Python's exceptions do, so "Note: …" or "Killed: 9" (macOS's
# shell after SIGKILL) are not taken for one
_EXCEPTION_LINE = re.compile(r"(?:[A-Za-z_]\w*\.)*([A-Z]\w*)(?::(?:\s.*)?|\s*)")
_EXCEPTION_END = re.compile(r"(?:Error|Exception|Exit|Interrupt|Iteration|Group|Warning)$")


def is_exception_line(line: str) -> bool:
    """Whether an unindented line has the shape of Python's exception line under a traceback."""
    m = _EXCEPTION_LINE.fullmatch(line.rstrip())
    if m is None:
        return False
    name = m.group(1)
    return bool(_EXCEPTION_END.search(name)) or (":" in line and sum(c.isupper() for c in name) >= 2)


class TracebackReader:
    """Follows the traceback opened by each header line and keeps the exception line that ends it, for every line
    from the header to it (the header, a frame, a frame's source line such as 'raise ValueError(f"…")', which a
    knowledge-base signature can match). A line that is not a frame, its source line or markers ends the traceback:
    when it has an exception's shape it is the error; otherwise the paste was cut inside the traceback and its lines
    keep no error line."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int, str]] = []  # (header's line number, exception's line number, its line)
        self._open: int | None = None  # the header's line number, while its traceback is being read
        self._after_frame = False  # the line before was a frame: this one is its source line, indented or not

    def feed(self, n: int, line: str, low: str) -> None:
        if "traceback" in low and TRACEBACK_HEADER.search(low):
            self._open, self._after_frame = n, False
            return
        if self._open is None or not line.strip():
            return
        if _FRAME_LINE.match(low):
            self._after_frame = True
            return
        if self._after_frame or line[0] in " \t" or _MARKERS_ONLY.fullmatch(line):
            self._after_frame = False
            return
        if is_exception_line(line):
            self.spans.append((self._open, n, line))
        self._open = None

    def error_of(self, n: int) -> tuple[int, str] | None:
        """The exception line (its number, the line) of the traceback that line ``n`` belongs to, or None."""
        for header, at, line in self.spans:
            if header <= n < at:
                return at, line
        return None

"""An answer that names the error is titled with the error, not with a traceback's header (diagnose23b, session 23).

CPython prints "Traceback (most recent call last):", the frames (each '  File "…", line N, in f' with its source line
under it), then the exception's own line unindented, "qualified.Name: message" (Lib/traceback.py,
TracebackException.format_exception_only). made73-m17's answer was titled "Not a memory failure: Traceback (most recent
call last):": the header is the first line that states an error, but it names none. The title is the exception line;
where the paste is cut inside the traceback (no exception line), the header stays, as nothing else names the error.
The same holds where a signature matched a frame's source line inside the traceback (made73-l11 was titled
"raise valueerror(f )", llama-cpp-python's raise statement with its string taken out, instead of the ValueError).
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.last_resort import is_exception_line

# made73-m17 (round73_make/m17.py, CPython 3.11.7): the record's own lines, its frames shortened to three
_M17 = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/r73/run-bd363f12/pack_shards.py", line 14, in <module>\n'
    "    for shard, n in pool.map(pack, range(8)):\n"
    '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/concurrent/futures/_base.py", line 317, in _result_or_cancel\n'
    "    return fut.result(timeout)\n"
    "           ^^^^^^^^^^^^^^^^^^^\n"
    '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/concurrent/futures/_base.py", line 401, in __get_result\n'
    "    raise self._exception\n"
    "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly while the "
    "future was running or pending.\n")


def test_the_title_is_the_exception_line_not_the_traceback_header():
    d = diagnose_text(_M17)
    assert d.category == "not_memory"  # the answer itself is diagnose23's (no signal of memory in the text)
    assert d.title == ("Not a memory failure: concurrent.futures.process.BrokenProcessPool: A process in the process "
                       "pool was terminated abruptly while the future was running or pending.")
    assert d.matched_line is not None and d.matched_line.startswith("concurrent.futures.process.BrokenProcessPool:")
    assert d.line_number == 9  # the exception's line, counted from 1 in the text above


def test_frames_pasted_without_their_indentation_still_lead_to_the_exception_line():
    # textgen-4821's paste (GitHub dropped the indentation): a frame line, then its source line, both unindented
    text = ("Traceback (most recent call last):\n"
            'File "/Users/colin/text-generation-webui/installer_files/env/lib/python3.11/site-packages/exllamav2/'
            'ext.py", line 14, in\n'
            "import exllamav2_ext\n"
            "ModuleNotFoundError: No module named 'exllamav2_ext'\n")
    assert diagnose_text(text).title == "Not a memory failure: ModuleNotFoundError: No module named 'exllamav2_ext'"


def test_a_traceback_cut_before_its_exception_keeps_the_header():
    # the same frames with the exception line cut off (as lmdeploy-3453's and cads-4's pastes end): nothing else
    # names the error, so the header stays the title
    cut = _M17.rsplit("concurrent.futures", 1)[0]
    d = diagnose_text(cut)
    assert d.category == "not_memory"
    assert d.title == "Not a memory failure: Traceback (most recent call last):"


def test_the_exception_line_shape():
    assert is_exception_line("RuntimeError")                        # a bare name: the message was empty
    assert is_exception_line("torch.OutOfMemoryError: CUDA out of memory.")
    assert is_exception_line("concurrent.futures.process.BrokenProcessPool: A process …")  # two capitals, a message
    assert not is_exception_line("Killed: 9")          # macOS's shell after SIGKILL: one capital, no exception ending
    assert not is_exception_line("Note: the model was quantized")
    assert not is_exception_line("During handling of the above exception, another exception occurred:")
    assert not is_exception_line("import exllamav2_ext")


# made73-l11 (round73_make/l11.py, llama-cpp-python 0.3.36 on CPython 3.11.7): the record's last lines
_L11 = (
    "llama_model_load: error loading model: error loading model hyperparameters: key not found in model: "
    "llama.context_length\n"
    "llama_model_load_from_file_impl: failed to load model\n"
    "Traceback (most recent call last):\n"
    '  File "/tmp/r73/run-f0de32be/chat.py", line 3, in <module>\n'
    '    llm = Llama(model_path="./tiny-chat-lora-q8.gguf", n_ctx=2048)\n'
    "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/llama_cpp/_internals.py", line 62, in __init__\n'
    '    raise ValueError(f"Failed to load model from file: {path_model}")\n'
    "ValueError: Failed to load model from file: ./tiny-chat-lora-q8.gguf\n")


def test_a_source_line_matched_inside_a_traceback_gives_way_to_the_exception_line():
    d = diagnose_text(_L11)
    assert d.category == "not_memory"
    assert d.title == "Not a memory failure: ValueError: Failed to load model from file: ./tiny-chat-lora-q8.gguf"
    assert d.line_number == 9  # two llama.cpp lines, the header, two frames with their lines and a marker line


def test_a_source_line_with_no_exception_line_after_it_keeps_its_own_title():
    # the same lines cut before the exception: the raise statement stays what the answer names (as before)
    d = diagnose_text(_L11.rsplit("ValueError:", 1)[0])
    assert d.category == "not_memory"
    assert not d.title.startswith("Not a memory failure: ValueError:")
    assert d.line_number == 8  # the raise statement's line

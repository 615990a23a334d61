"""KoboldAI's out-of-memory wrapper is on its load endpoint too (review of session 15; fixed by diagnose50, session 16).

KoboldAI's API answers an out-of-memory with HTTP 507 and "KoboldAI ran out of memory: …" (aiserver.py,
api_catch_out_of_memory_errors). api_schema_wrap puts that wrapper around every API endpoint: the generate endpoints
(the public pastes below, both relayed while generating) and PUT /api/v1/model, whose docstring says "Load a model".
So the wrapper's words say a request ran only in the lines around them (a load said beside them wins), and on their
own line they name no phase.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.signals import phase_of_line

# https://github.com/henk717/KoboldAI/issues/381 (a client relaying KoboldAI's generate answer)
KOBOLDAI_381 = ('Kobold returned error: 507 INSUFFICIENT STORAGE {"detail":{"msg":"KoboldAI ran out of memory: CUDA '
                'error: out of memory","type":"out_of_memory.unknown.unknown"}}\n')
# https://github.com/TavernAI/TavernAI-v1/issues/15 (TavernAI printing KoboldAI's error object after a few messages)
TAVERNAI_15 = ("    msg: 'KoboldAI ran out of memory: CUDA out of memory. Tried to allocate 26.00 MiB (GPU 0; 14.76 GiB "
               "total capacity; 13.65 GiB already allocated; 9.88 MiB free; 13.85 GiB reserved in total by PyTorch) If "
               "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
               "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF',\n"
               "    type: 'out_of_memory.gpu.cuda'\n")


def test_the_wrapper_relayed_with_nothing_else_is_still_a_request():
    assert diagnose_text(KOBOLDAI_381).category == "cuda_oom_long_context"
    assert diagnose_text(TAVERNAI_15).category == "cuda_oom_long_context"


def test_the_wrapper_under_its_load_endpoint_is_the_load():
    # the same answer to a client's PUT /api/v1/model (KoboldAI's "Load a model" endpoint), not to a generation
    put = 'requests.put("http://localhost:5000/api/v1/model", json={"model": "PygmalionAI/pygmalion-6b"})\n'
    assert diagnose_text(put + KOBOLDAI_381).category == "cuda_oom_load"
    assert diagnose_text("PUT /api/latest/model HTTP/1.1\n" + TAVERNAI_15).category == "cuda_oom_load"


def test_the_wrapper_beside_a_loaders_frame_is_the_load():
    # KoboldAI's own traceback under put_model: its loader's call is a load word (phase.LOAD)
    frames = '  File "aiserver.py", line 9012, in put_model\n    load_model(use_gpu=True)\n'
    assert diagnose_text(frames + KOBOLDAI_381).category == "cuda_oom_load"


def test_contrast_the_generate_endpoint_stays_a_request():
    post = "POST /api/v1/generate HTTP/1.1\n"
    assert diagnose_text(post + KOBOLDAI_381).category == "cuda_oom_long_context"
    # reading the model's name (GET /api/v1/model) loads nothing
    assert diagnose_text("GET /api/v1/model HTTP/1.1\n" + KOBOLDAI_381).category == "cuda_oom_long_context"


def test_the_wrappers_own_line_names_no_phase():
    assert phase_of_line(KOBOLDAI_381.lower()) is None

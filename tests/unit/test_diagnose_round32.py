"""Round 32's misses (session 12, diagnose28), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: a kill whose own line gives a lack of memory as its reason (Ray's memory monitor) is the
machine's RAM, and a PyTorch out-of-memory holding far more than the named encoder can weigh is the run. Pastes are the
threads' own lines (measurements/public_errors/round32.jsonl). The third miss, sentence-transformers#527, was a label:
its own figures show the first allocation of an empty process (the weights being placed), now labelled the load.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

MEMORY = {"cuda_oom_load", "cuda_oom_long_context", "oom_killer", "llamacpp_alloc_fail", "fragmentation"}
ROBERTA_OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 34.00 MiB (GPU 0; 10.91 GiB total capacity; "
               "9.52 GiB already allocated;\n17.56 MiB free; 776.30 MiB cached)")


# -- a kill for memory: only a monitor of the machine's memory kills --------------------------------------------------

def test_ray_raylet_killing_workers_for_memory_pressure_is_host_ram():
    # WMPO#3, as pasted: Ray's raylet reports the workers its memory monitor killed, then points to its OOM docs
    pasted = ("(raylet) node_manager.cc:3277: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
              "crashed due to other reasons at node (ID: 8289f87b78d161ae21bf723c7c57838345a56248dd48a2c3f0d5ac73, IP: "
              "172.24.0.226) over the last time period.\n"
              "(raylet) Refer to the documentation on how to address the out of memory issue: "
              "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more "
              "memory on this node or reducing task parallelism by requesting more CPUs per task.")
    got = diagnose_text(pasted)
    assert got.category == "oom_killer"
    assert "RAM" in got.title


def test_a_task_killed_because_the_node_is_low_on_memory_is_host_ram():
    # the same act in other words: the kill's reason is the node's memory
    got = diagnose_text("(raylet) Task killed because the node is low on memory (memory used=61.2GB / 62.6GB)")
    assert got.category == "oom_killer"


def test_a_worker_killed_for_an_exception_is_not_memory():
    # look-alike: a kill whose reason is not memory (the scheduler stopped it after an error)
    got = diagnose_text("Worker killed due to an unhandled exception in the actor")
    assert got.category not in MEMORY


def test_a_gpu_out_of_memory_inside_a_ray_task_stays_the_cards():
    # look-alike: Ray wraps PyTorch's own CUDA error; the card ran out, no monitor killed anything
    pasted = ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::train_fn() (pid=4242, ip=10.0.0.2)\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
              "23.69 GiB of which 1.12 GiB is free.")
    assert diagnose_text(pasted).category in {"cuda_oom_load", "cuda_oom_long_context"}


def test_a_process_said_killed_for_a_cuda_out_of_memory_stays_the_cards():
    # look-alike: the kill's reason names the GPU, so the card is what ran out
    got = diagnose_text("The trainer process was killed due to CUDA out of memory on GPU 0")
    assert got.category in {"cuda_oom_load", "cuda_oom_long_context"}


# -- more allocated than the named model weighs: the run -------------------------------------------------------------

def test_sentence_transformers_roberta_holding_9_gib_on_an_11_gib_card_is_the_run():
    # sentence-transformers#57, as pasted: a RoBERTa weighs at most ~2.2 GB in fp32, yet PyTorch holds 9.52 GiB —
    # activations of the batches being encoded (the maintainer: memory grows with the sentence length)
    pasted = ROBERTA_OOM + "\nI used a roberta model\nWhen I used batch size=16."
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_the_same_figures_with_a_13b_llm_named_stay_the_load():
    # look-alike by its numbers: 9.5 GiB is what a 13B model's weights fill while they load (no run evidence)
    # (13b: a parameter count named, the load's sign where no phase is stated since session 21's diagnose21c)
    assert diagnose_text(ROBERTA_OOM + "\nI used a llama-2-13b model").category == "cuda_oom_load"


def test_an_encoder_beside_a_larger_model_caps_nothing():
    # a RAG setup: embeddings from MiniLM, answers from a 13B — the 22.91 GiB PyTorch holds can be the 13B's weights
    # loading; the encoder's 2.24 GB bound speaks only where no model is named by its billions (review, session 12)
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 270.00 MiB. GPU 0 has a total capacity of "
           "23.69 GiB of which 180.00 MiB is free. Of the allocated memory 22.91 GiB is allocated by PyTorch, and "
           "120.00 MiB is reserved by PyTorch but unallocated.")
    rag = ("I build embeddings with sentence-transformers/all-MiniLM-L6-v2 and answer with "
           "meta-llama/Llama-2-13b-chat-hf on my 3090.\n" + oom)
    assert diagnose_text(rag).category == "cuda_oom_load"  # a parameter count named: the load's sign (diagnose21c)
    encoder_only = "I build embeddings with sentence-transformers/all-MiniLM-L6-v2 on my 3090.\n" + oom
    assert diagnose_text(encoder_only).category == "cuda_oom_long_context"


def test_a_roberta_said_to_be_loading_stays_the_load():
    # look-alike: a load said around it decides first (phase rule, evidence 1-3 before the numbers)
    pasted = "model = AutoModel.from_pretrained(\"roberta-large\").to(device)\n" + ROBERTA_OOM
    assert diagnose_text(pasted).category == "cuda_oom_load"


def test_an_xxl_roberta_named_by_its_size_is_no_small_encoder():
    # look-alike: XLM-R XXL (10.7B parameters) can fill the card with its weights alone
    assert diagnose_text(ROBERTA_OOM + "\nI used facebook/xlm-roberta-xxl").category == "cuda_oom_phase_unstated"


def test_a_roberta_with_a_small_allocation_stays_the_load():
    # look-alike: 2.1 GiB allocated is within what a large encoder's weights can be: no evidence of a run
    pasted = ("RuntimeError: CUDA out of memory. Tried to allocate 34.00 MiB (GPU 0; 3.82 GiB total capacity; 2.10 GiB "
              "already allocated; 17.56 MiB free; 76.30 MiB cached)\nI used a roberta model")
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"


def test_an_empty_process_refused_bert_bases_embedding_is_the_load():
    # sentence-transformers#527, as pasted: 0 bytes allocated by this process, so the 90 MiB refused is its first
    # allocation — BERT-base's 30,522 x 768 fp32 embedding as encode() moves the model to the card (another process held
    # the card); the thread's "creating embeddings" is where the load happened
    pasted = ("The BERT SentenceTransformer was working normally up until 2 days ago and now suddenly causing this error "
              "while running the same code.\n"
              "RuntimeError: CUDA out of memory. Tried to allocate 90.00 MiB (GPU 0; 14.76 GiB total capacity; 0 bytes "
              "already allocated; 43.44 MiB free; 0 bytes reserved in total by PyTorch)")
    assert diagnose_text(pasted).category == "cuda_oom_phase_unstated"

"""Round 34's misses (session 12, diagnose29), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: faiss's own wording of a failed device allocation ("Failed to cudaMalloc N bytes", "could not
cudaMalloc N bytes!") before an abort, a lack of memory asked as a question before the program's own refusal, and the
phase from what asked — a library whose device memory holds data and scratch, never weights (faiss), a layer applied
to an activation, a prediction on an input said to have failed. Pastes are the threads' own lines
(measurements/public_errors/round34.jsonl). Two stay unanswered (docs/diagnosis.md): cellpose#189 carries no phase, and
nnU-Net's "probably due to a lack of memory" (CADS#4) is a guess by the hedge rule.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

DEVICE = {"cuda_oom_load", "cuda_oom_long_context"}


# -- faiss: the device allocator named with the verb first, then an abort ---------------------------------------------

def test_faiss_adding_16_gb_of_vectors_failed_to_cudamalloc_then_aborted_is_the_run():
    # faiss#648, as pasted: index.add of 16 GB of vectors into a GpuIndexFlat on a 16 GB GPU
    pasted = ("Faiss assertion 'cudaMalloc(p, size) == cudaSuccess' failed in void faiss::gpu::allocMemorySpace("
              "faiss::gpu::MemorySpace, void**, size_t) at utils/MemorySpace.cpp:20; details: Failed to cudaMalloc "
              "16000000000 bytes\nAborted")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_faiss_kmeans_could_not_cudamalloc_while_clustering_is_the_run():
    # faiss#108, as pasted: GPU k-means of 39M points on a 12 GB Titan X; faiss itself is not named
    pasted = ("Clustering 39000000 points in 384D to 1000000 clusters, redo 1 times, 3 iterations\n"
              "  Preprocessing in 11.81 s\n"
              "could not cudaMalloc 4000000 bytes!\n"
              "Aborted (core dumped)")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_an_abort_alone_or_a_missing_cudamalloc_symbol_is_still_no_memory():
    # look-alikes: an abort with no allocation named is a crash; a cudaMalloc* symbol the loader cannot find is a build
    # that does not match the library, not a failed allocation
    assert diagnose_text("Aborted (core dumped)").category == "not_memory"
    assert diagnose_text("ImportError: libtorch_cuda.so: undefined symbol: cudaMallocAsync").category == "not_memory"


def test_could_not_cudamalloc_while_checkpoint_shards_load_stays_the_load():
    # look-alike for the phase: the same words under a model's weights loading
    pasted = ("Loading checkpoint shards:  50%|#####     | 1/2 [00:04<00:04,  4.01s/it]\n"
              "could not cudaMalloc 4000000 bytes!")
    assert diagnose_text(pasted).category == "cuda_oom_load"


# -- a lack of memory asked as a question: only the question is a guess -----------------------------------------------

def test_colabfold_question_before_xlas_refusal_is_the_run():
    # ColabFold#186, as pasted: a 912-residue prediction on free Colab
    pasted = ("Could not predict test_cdf7a. Not Enough GPU memory? RESOURCE_EXHAUSTED: Out of memory while trying to "
              "allocate 7866899248 bytes.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_question_with_no_refusal_after_it_is_still_no_memory():
    # look-alikes: the writer's guess, and the program's crash with the guess beside it
    assert diagnose_text("Process crashed (out of memory?)").category == "not_memory"
    assert diagnose_text("Segmentation fault (core dumped). Not enough RAM? Only 3 of 64 GB were in use."
                         ).category == "not_memory"


# -- a layer applied to an activation is the forward pass ----------------------------------------------------------

def test_directml_refusal_on_a_layer_applied_to_x_is_the_run():
    # DirectML#355, as pasted: the failing line quoted in prose, not as a traceback frame
    pasted = ('Running causes, the vram usage on my AMD Radeon VII to shoot up to 15750 MB odd and causes this error\n'
              '"Could not allocate tensor with 81544192 bytes. There is not enough GPU video memory available!"\n'
              'on the line\n x, _ = self.lstm1(x)')
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_a_layer_being_built_or_the_model_moved_is_not_the_forward_pass():
    # look-alikes: building the layer and moving the model are the load; the same refusal stays the load (the default)
    built = ('"Could not allocate tensor with 81544192 bytes. There is not enough GPU video memory available!"\n'
             'on the line\n self.lstm1 = nn.LSTM(512, 512)')
    moved = ('"Could not allocate tensor with 81544192 bytes. There is not enough GPU video memory available!"\n'
             'on the line\n model = self.to(device)')
    assert diagnose_text(built).category == "cuda_oom_phase_unstated"
    assert diagnose_text(moved).category == "cuda_oom_load"


def test_faiss_refusal_with_oom_words_after_a_few_runs_is_the_run():
    # faiss#2020, as pasted: k-means with gpu=True works a few times, then fails
    pasted = ("RuntimeError: Error in virtual void* faiss::gpu::StandardGpuResourcesImpl::allocMemory(const "
              "faiss::gpu::AllocRequest&) at /home/conda/feedstock_root/build_artifacts/faiss-split_1618468126454/work/"
              "faiss/gpu/StandardGpuResources.cpp:443: Error: 'err == cudaSuccess' failed: Failed to cudaMalloc "
              "536870912 bytes on device 1 (error 2 out of memory\nOutstanding allocations:")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"

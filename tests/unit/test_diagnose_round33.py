"""Round 33's misses (session 12, diagnose28), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: OpenVINO's GPU plugin's "out of GPU resources" (its words for a device buffer it could not
create) under a graph node being run, a CPU plugin's allocator named by the code that refused (host RAM), and OpenCL
allocation failures, which come with the command that runs. Pastes are the threads' own lines
(measurements/public_errors/round33.jsonl). Three stay unanswered (docs/diagnosis.md): WhisperX-GUI#1 carries no phase,
stable-diffusion.cpp#810's context pool is by runlocal's rule a size the code fixed, and openvino#25141's paste holds
only the plugin's advice, not its "CL_OUT_OF_RESOURCES exception" line.
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text

DEVICE = {"cuda_oom_load", "cuda_oom_long_context", "cuda_oom_phase_unstated"}


# -- OpenVINO's GPU plugin: "out of GPU resources" is a device buffer it could not create ----------------------------

def test_immich_openvino_out_of_gpu_resources_while_running_a_node_is_the_run():
    # immich#13674, as pasted: ONNX Runtime's OpenVINO execution provider runs a subgraph as one node on an Intel iGPU
    pasted = (
        "[E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] Non-zero status code returned while running "
        "OpenVINO-EP-subgraph_2 node. Name:'OpenVINOExecutionProvider_OpenVINO-EP-subgraph_2_0' Status Message: "
        "/onnxruntime/onnxruntime/core/providers/openvino/ov_interface.cc:243 void "
        "onnxruntime::openvino_ep::OVInferRequest::WaitRequest() [OpenVINO-EP]  Wait Model Failed: Exception from "
        "src/inference/src/cpp/infer_request.cpp:245:\n"
        "Exception from src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp:185:\n"
        "[GPU] out of GPU resources")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_out_of_gpu_resources_alone_is_a_device_memory_failure():
    # the plugin's words with nothing around them: a device's memory, the phase not said (the load, by default)
    assert diagnose_text("[GPU] out of GPU resources").category in DEVICE


def test_a_kernels_per_block_resource_limit_is_still_no_memory():
    # look-alikes: Triton's shared-memory limit and CUDA's launch limit say "out of resource(s)" of a kernel, not memory
    triton = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 126978, Hardware limit: "
              "101376. Reducing block sizes or `num_stages` may help.")
    assert diagnose_text(triton).category == "not_memory"
    assert diagnose_text("RuntimeError: CUDA error: too many resources requested for launch").category == "not_memory"


# -- the allocator the code names: a CPU plugin's is the host's RAM ---------------------------------------------------

def test_openvino_cpu_plugin_failing_a_14_gb_allocation_is_host_ram():
    # openvino-ai-plugins-gimp#207, as pasted: super-resolution on device CPU, a machine with 8 GB of RAM
    pasted = ("[ ERROR ] Error during model execution: Exception from src/inference/src/cpp/core.cpp:109:\n"
              "Exception from src/inference/src/dev/plugin.cpp:53:\n"
              "Exception from src/plugins/intel_cpu/src/cpu_memory.cpp:248:\n"
              "Failed to allocate 14495514624 bytes of memory\n\n"
              "[ ERROR ] Failed to generate super-resolution image")
    assert diagnose_text(pasted).category == "oom_killer"


def test_the_same_refusal_from_the_gpu_plugin_stays_the_devices():
    # look-alike: the GPU plugin's path (intel_gpu) names no CPU allocator
    pasted = ("Exception from src/plugins/intel_gpu/src/runtime/ocl/ocl_engine.cpp:170:\n"
              "Failed to allocate 14495514624 bytes of memory")
    assert diagnose_text(pasted).category in DEVICE


def test_a_cuda_out_of_memory_next_to_a_cpu_allocators_frame_stays_the_cards():
    # look-alike: the failing line names CUDA, so the card ran out whatever code is around it
    pasted = ("Exception from src/plugins/intel_cpu/src/cpu_memory.cpp:248:\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
              "23.64 GiB of which 1.02 GiB is free.")
    assert diagnose_text(pasted).category in DEVICE


# -- OpenCL allocates a buffer when the command that uses it runs -----------------------------------------------------

def test_pocl_failing_to_allocate_a_buffer_for_a_command_is_the_run():
    # pocl#1155, as pasted: the buffer is migrated to the device for a command about to run
    pasted = ("POCL: in fn can_run_command at line 608:\n"
              "  |     ERROR |  Failed to allocate 4000 bytes on device ALMAIF TCE\n"
              "pocl/lib/CL/pocl_util.c:789: pocl_create_migration_commands: Assertion `p->mem_ptr != NULL' failed.")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_clij_blur_kernel_refused_its_buffer_is_the_run():
    # clij#19, as pasted: CL_MEM_OBJECT_ALLOCATION_FAILURE as a blur kernel runs on the GPU
    pasted = ("java.lang.RuntimeException: net.haesleinhuepf.clij.clearcl.exceptions.OpenCLException: OpenCL error: -4 "
              "-> CL_MEM_OBJECT_ALLOCATION_FAILURE\n"
              "\tat net.haesleinhuepf.clij.clearcl.ClearCLKernel.run(ClearCLKernel.java:480)\n"
              "\tat net.haesleinhuepf.clij.kernels.Kernels.blur(Kernels.java:558)")
    assert diagnose_text(pasted).category == "cuda_oom_long_context"


def test_an_opencl_allocation_failure_while_weights_load_stays_the_load():
    # look-alike: a load said around it decides first
    pasted = ("Loading model weights with load_weights()\n"
              "java.lang.RuntimeException: OpenCLException: OpenCL error: -4 -> CL_MEM_OBJECT_ALLOCATION_FAILURE")
    assert diagnose_text(pasted).category == "cuda_oom_load"

"""Which allocator the code around an out-of-memory names, when the failing line names none: a CPU plugin's own
allocator (then the memory that ran out is the host's), or an OpenCL runtime (then the failure came with a command
that runs). Read by the scanner (classify) on the lines kept around a generic out-of-memory, like the phase words.
Written from round 33's misses (session 12, diagnose28), each with look-alikes in tests/unit/test_diagnose_round33.py;
a library whose device memory holds data, not weights (faiss), and a layer applied to an activation, from round 34's
(diagnose29, tests/unit/test_diagnose_round34.py).
"""

from __future__ import annotations

import re

__all__ = ["CLR_OOM", "CPU_ALLOCATOR", "DATA_ALLOCATOR", "DIRECTX_GPU", "JS_CODE", "JS_ERROR", "JS_FRAME", "JS_ON_GPU",
           "LAYER_ON_ACTIVATION", "OPENCL"]

# the source that raised the refusal is a CPU plugin's memory code: OpenVINO's CPU plugin ("Exception from
# src/plugins/intel_cpu/src/cpu_memory.cpp:248: Failed to allocate 14495514624 bytes of memory",
# openvino-ai-plugins-gimp#207), a CPU allocator named as a class or file. A GPU plugin's path (intel_gpu) is not it
CPU_ALLOCATOR = re.compile(r"[/\\]intel_cpu[/\\]|\bcpu_memory\.(?:cpp|cc|c|h)\b|\bcpu_?allocator\b")
# ... or JavaScript code: a frame in a package of node_modules or a script's "file.js:328:30", V8's own frames
# ("v8::internal::Heap", node::OOMErrorHandler): what asked for memory was a script, whose objects and ArrayBuffers the
# JavaScript engine keeps in its heap in host RAM (TensorFlow.js' "Error: Out of memory" concatenating a model's
# weight files, tfjs#2637: round 37, session 13, diagnose31). Not where the frame names a GPU backend (tfjs-backend-
# webgl, webgpu, tfjs-node-gpu): those allocate the card's memory (the caller checks, as signals.names_gpu does).
# Counted only as frames of JavaScript's own error (JS_ERROR) following it line by line (JS_FRAME): a browser console's
# unrelated TypeError pasted above a server's CUDA refusal (ComfyUI) says nothing of what allocated (review13 finding 2)
JS_CODE = re.compile(r"node_modules[/\\]|\.m?js:\d+(?::\d+)?\b|\bv8::|\bnode::oomerrorhandler\b")
# JavaScript's own error form of an out-of-memory, as Node, a browser console or React Native print it ("Error: Out
# of memory", "Uncaught (in promise) Error: Out of memory", "[Unhandled promise rejection: Error: Out of memory]")
JS_ERROR = re.compile(r"^\W*(?:unhandled promise rejection:\s*)?(?:uncaught\s+(?:\(in promise\)\s+)?)?"
                      r"(?:range)?error:\s*out of memory\b")
# a stack frame as V8 prints it ("    at f (file.js:1:2)") or React Native's red box ("- node_modules\\…js:328:30 in f")
JS_FRAME = re.compile(r"^\s*(?:at|-)\s")
# a GPU backend, a device or a GPU / LLM binding named in a frame or anywhere around a script's out-of-memory: then the
# card's memory ran out, whatever the frames are (WebGPU: WebLLM / MLC, onnxruntime-web's JSEP; node-llama-cpp over
# llama.cpp; "Allocation on device 0", "Device limit")
JS_ON_GPU = re.compile(r"gpu|webgl|\bgl\b|cuda|metal|web-?llm|\bmlc\b|mlc-ai|node-llama-cpp|llama\.cpp"
                       r"|onnxruntime-web|\bjsep\b|\bdevice\s*(?:\d|limit)")
# .NET's System.OutOfMemoryException (read as the CLR's managed heap, host RAM: signals._HOST_RUNTIME_REFUSAL) is also
# what .NET makes of a native HRESULT E_OUTOFMEMORY (0x8007000E, "Not enough memory resources are available to complete
# this operation"), which Direct3D 12 and DirectML return when the card's memory cannot hold a resource
# (ID3D12Device::CreateCommittedResource): with DirectML, Direct3D / DirectX or a GPU named in the window, the card's
# memory ran out (an ONNX Runtime GenAI model on the DirectML execution provider: review13 finding 6)
CLR_OOM = re.compile(r"\bsystem\.outofmemoryexception\b")
DIRECTX_GPU = re.compile(r"directml|\bdml\b|\bd3d1[12]|directx|\bdxgi\b|learningmodeldevice")
# an OpenCL runtime or its status names: OpenCL allocates a buffer's device memory lazily, when a command that uses it
# is enqueued or runs — the specification lists CL_MEM_OBJECT_ALLOCATION_FAILURE among clEnqueueNDRangeKernel's and
# clEnqueueWriteBuffer's errors ("failure to allocate memory for data store associated with … buffer objects specified
# as arguments to kernel", OpenCL 1.2 §5.8, §5.2.2) and pocl migrates buffers to the device when a command is about to
# run (pocl_create_migration_commands). So an OpenCL allocation failure with no load said around it came with a kernel
# or transfer being run (pocl#1155, clij#19)
OPENCL = re.compile(r"\bopencl\b|\bpocl\b|\bcl_mem_object_allocation_failure\b|\bclenqueue\w*|\bclearcl\b")
# a GPU library whose device memory holds data and scratch space, never a model's weights: faiss's GPU resources
# (faiss::gpu, StandardGpuResources::allocMemory, allocMemorySpace in faiss/gpu/utils/MemorySpace.cpp, "Faiss
# assertion"), which allocate an index's vectors and a search's or k-means' temporary memory as those run — and
# faiss's k-means announcing its work ("Clustering 39000000 points in 384D to 1000000 clusters", faiss/Clustering.cpp).
# So its refusals come while an index adds, searches or trains (faiss#648, #108, #2020: round 34)
DATA_ALLOCATOR = re.compile(r"\bfaiss\b|\bgpuresources\w*|\ballocmemoryspace\b|\bclustering \d+ points\b")
# a statement that applies a model's layer to an activation ("x, _ = self.lstm1(x)", "h = self.conv2(h)"): the forward
# pass, computing on an input — quoted as the failing line in prose as well as in a traceback (DirectML#355: "on the
# line x, _ = self.lstm1(x)"). Not a layer being built ("self.lstm1 = nn.LSTM(…)") nor a model moved ("self.to(x)")
LAYER_ON_ACTIVATION = re.compile(r"=\s*self\.(?!to\b|cuda\b|load\w*\b)\w+\((?:x|h|hidden\w*|inputs?|feat\w*|out)\)")

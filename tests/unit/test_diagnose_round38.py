"""Round 38's misses (session 13, diagnose31), each fixed by a signal and tested with the user's paste and the
look-alikes beside it: host runtimes' own refusals are the host's memory — Go's runtime failing to grow its heap,
Android's runtime (ART) refusing a Java allocation, .NET's OutOfMemoryException, PHP's memory_limit, MATLAB's maximum
array size preference for a real array (one of a tebibyte or more is a size computed wrong). Pastes are the threads'
own lines (measurements/public_errors/round38.jsonl).
"""

from __future__ import annotations

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.kb import MEMORY_CATEGORIES

# -- Go's runtime --------------------------------------------------------------------------------------------------


def test_go_runtime_failing_to_map_more_heap_is_host_ram():
    # tls-observatory#377, as pasted
    pasted = ("fatal error: runtime: out of memory\n\nruntime stack:\nruntime.throw(0x6731d0, 0x16)\n"
              "        /tmp/go/src/runtime/panic.go:608 +0x72\nruntime.sysMap(0xc008000000, 0x4000000, 0x847798)\n"
              "        /tmp/go/src/runtime/mem_linux.go:165 +0xc7")
    assert diagnose_text(pasted).category == "oom_killer"


def test_go_runtime_out_of_memory_asked_about_in_chinese_is_host_ram():
    # kunpeng#57, as pasted: "in what case is this error reported … the program stopped while I used the plugin"
    pasted = ("在什么情况下会报这种错 fatal error: runtime: out of memory\n"
              "我在用Kunpeng -PostgreSQL 弱口令这个插件的时候报了这个错，程序终止了。")
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_cuda_runtime_error_out_of_memory_stays_the_cards():
    # look-alike: "runtime" beside "out of memory" in a CUDA runtime error (TensorRT-LLM's backend at engine load)
    pasted = ("[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory "
              "(/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)")
    category = diagnose_text(pasted).category
    assert category in MEMORY_CATEGORIES and category != "oom_killer"


def test_go_concurrent_map_writes_is_not_memory():
    # look-alike: another of Go's runtime fatal errors, a data race
    assert diagnose_text("fatal error: concurrent map writes\n\ngoroutine 12 [running]:").category \
        not in MEMORY_CATEGORIES


# -- Android's runtime and .NET's CLR ------------------------------------------------------------------------------


def test_android_art_refusing_a_model_files_bytes_is_host_ram():
    # onnxruntime-inference-examples#183, as pasted: reading a model file into a byte array on the phone
    pasted = ("E/AndroidRuntime: FATAL EXCEPTION: main\n"
              "    Process: ai.onnxruntime.example.imageclassifier, PID: 21599\n"
              "    java.lang.OutOfMemoryError: Failed to allocate a 361332168 byte allocation with 8388608 free bytes "
              "and 164MB until OOM, target footprint 372920392, growth limit 536870912\n"
              "        at java.util.Arrays.copyOf(Arrays.java:3670)")
    assert diagnose_text(pasted).category == "oom_killer"


def test_a_java_stack_overflow_is_not_memory():
    # look-alike: a recursion's stack, not the heap
    pasted = "E/AndroidRuntime: FATAL EXCEPTION: main\n    java.lang.StackOverflowError: stack size 8MB"
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


def test_dotnet_out_of_memory_exception_downloading_training_data_is_host_ram():
    # machinelearning-modelbuilder#665, as pasted
    pasted = ("When training on a large dataset (56 features, 1.2 million rows - all floats), the ML builder crashes "
              "during \"Downloading data\" (from SQL server), with an OutOfMemoryException.\n"
              "Error retrieving SQL data: \"Exception of type 'System.OutOfMemoryException' was thrown.\"")
    assert diagnose_text(pasted).category == "oom_killer"


def test_dotnet_stack_overflow_is_not_memory():
    # look-alike: the CLR's stack, not its heap
    pasted = "Process is terminated due to StackOverflowException.\n   at System.Text.Json.JsonSerializer.Write"
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


# -- PHP's memory_limit --------------------------------------------------------------------------------------------


def test_php_allowed_memory_size_exhausted_is_host_ram():
    # faved#4, as pasted
    pasted = ("Hi, i'm new to PHP and a lot of other stuff. After trying to import all my links from Pocket got this "
              "error:\nFatal error: Allowed memory size of 134217728 bytes exhausted (tried to allocate 81513688 bytes) "
              "in /var/www/html/framework/responses/PageResponse.php on line 46")
    assert diagnose_text(pasted).category == "oom_killer"


def test_php_maximum_execution_time_is_not_memory():
    # look-alike: PHP's other per-script limit, a time
    pasted = "PHP Fatal error:  Maximum execution time of 30 seconds exceeded in /var/www/html/index.php on line 60"
    assert diagnose_text(pasted).category not in MEMORY_CATEGORIES


# -- MATLAB's array size preference --------------------------------------------------------------------------------


def test_matlab_refusing_a_real_131_gb_array_is_host_ram():
    # Suite2P#172, as pasted: a 33 GB data set whose registration asks for a 131 GB array
    pasted = ("Hi, I want to use suite2p to process a huge data set (1024*1024*16800), which is 33Gb.\n"
              "Error using zeros\n"
              "Requested 1024x1024x16800 (131.3GB) array exceeds maximum array size preference. Creation of arrays "
              "greater than this limit may take a long time and cause MATLAB to become unresponsive.")
    assert diagnose_text(pasted).category == "oom_killer"


def test_matlab_refusing_an_array_of_178_terabytes_is_a_size_computed_wrong():
    # look-alike: a MEX binding's garbled sizes (asets-matlab-maxflow#2, tuning data: not memory)
    pasted = ("Error using maxflowmex_v222\n"
              "Requested 274877907008x174 (178176.0GB) array exceeds maximum array size preference. Creation of "
              "arrays greater than this limit may take a long time and cause MATLAB to become unresponsive.")
    assert diagnose_text(pasted).category == "not_memory"

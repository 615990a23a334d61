"""Reasons a failure line gives that are not a lack of memory: the vocabulary ``signals.line_entry`` reads first.

A table of error strings by what they mean — no CUDA device, a bad model file, a crash by signal, a kernel image or
PTX toolchain that does not match the card, a driver too old, an illegal memory access, a runner's exit status, a
fixed-size arena, a port in use … — each mapped to its knowledge-base entry (``notmem-…``). A line that gives one of
these reasons is not a memory failure even if it also says "memory" (CUDA runtime error strings, cuda_runtime_api.h
``cudaGetErrorString``). Split out of ``signals`` (session 12, diagnose29): the table is data, the rules that weigh
it stay there.
"""

from __future__ import annotations

import re

# llama.cpp's warning that it could not lock the model in RAM (mlock / Windows VirtualLock), whatever words it gives
# ("failed to mlock … Cannot allocate memory", "not enough memory to mlock"): a lock limit (RLIMIT_MEMLOCK), and the
# model still loads, unlocked
MLOCK = re.compile(r"failed to (?:mlock|virtuallock)\b|\b(?:to|could not|cannot|can't|unable to) (?:mlock|virtuallock)\b")

# -- reasons that are not a lack of memory (checked first on a line; CUDA runtime error strings) ---------
# bash's job report of a SIGTERM: "Terminated", "[1]+  Terminated  python serve.py", "12345 Terminated" (strsignal)
TERMINATED_JOB = r"(?:\[\d+\][+-]?\s+)?(?:\d+\s+)?terminated"

# a limit on the job's running time, stated with its figure before the job was killed: a wrapper's own note ("wall-time
# limit 40s", "time limit: 2 h") or GNU timeout's command line ("timeout -s KILL 40 python3 gen.py"). timeout(1) sends
# the signal asked for when the time is up, and with KILL the child dies as the OOM killer's victims do — bash prints
# "Killed", the status is 137 ("137 if COMMAND (or timeout itself) is sent the KILL (9) signal (128+9)", coreutils
# timeout(1), https://kernel.org/doc/man-pages/online/pages/man1/timeout.1.html). A bare kill after such a limit, with
# nothing else saying memory ran short, is that stop (round 73's l17), not the kernel's OOM killer. A figure is needed:
# "within timeout" or a request's timeout setting is no limit on the job. timeout(1)'s command line counts only where
# it sends KILL: "-s, --signal=SIGNAL specify the signal to be sent on timeout … TERM signal is sent if no signal is
# specified", "-k, --kill-after=DURATION also send a KILL signal if COMMAND is still running this long after the
# initial signal was sent" (coreutils timeout(1)). A plain `timeout 60 python …` stops the job with TERM — exit 124,
# no "Killed" — so a bare kill after it was another sender's, the OOM killer's as often as not
_TIMEOUT_OPTION = r"(?:-(?:s|k|-signal|-kill-after)[\s=]?\S+|--preserve-status|--foreground|-v|--verbose)\s+"
_TIMEOUT_SENDS_KILL = r"(?:-s|--signal)[\s=]?(?:sig)?(?:kill|9)\s+|(?:-k|--kill-after)[\s=]?\d+(?:\.\d+)?[smhd]?\s+"
TIME_LIMIT_SET = re.compile(r"\b(?:wall[- ]?(?:clock[- ]?)?time|walltime|run[- ]?time|time) limit\b[\s:=(]*(?:of )?\d"
                            r"|(?:^\s*(?:[+$#>]\s*)?|[;&|]\s*)timeout\s+(?:" + _TIMEOUT_OPTION + r")*?(?:"
                            + _TIMEOUT_SENDS_KILL + r")(?:" + _TIMEOUT_OPTION + r")*\d+(?:\.\d+)?[smhd]?\s+\S")

NOT_MEMORY = (
    (re.compile(r"no cuda-capable device|cuda_error_no_device|no (?:cuda )?gpus? (?:are available|(?:were )?(?:found|detected))"
                r"|found no nvidia driver|devices?\(s\)? is/are busy or unavailable|cudaerrordevicesunavailable"),
     "notmem-no-cuda-device"),
    # llamafile / ggml: "CUDA library loaded but no devices detected", "failed to initialize CUDA: (null)"
    (re.compile(r"no (?:\w+ )?devices? (?:were |was )?(?:detected|found)\b|failed to initiali[sz]e cuda\b"),
     "notmem-no-cuda-device"),
    # the model file: cut short, another format, a tensor of the wrong size, or not there (llama.cpp llama_file,
    # ggml's magic check, llama_model_loader's bounds check "tensor '%s' data is not within the file bounds, model is
    # corrupted or incomplete", transformers' "Error no file named …")
    (re.compile(r"unexpectedly reached end of file|unknown \(magic, version\)|is this really a gg\w* file"
                r"|(?:invalid|bad|wrong) (?:gguf |file )?magic|not a valid gguf|has wrong size in model file"
                r"|not within the file bounds|model is corrupted or incomplete"
                r"|no such file or directory|\bdoes not exist\b|\berror no file named\b"
                r"|could not load llama model from path"
                # transformers (utils/hub.py cached_file): the repo or folder has no such file
                r"|does not appear to have (?:a )?files? named"), "notmem-bad-model-file"),
    # Ollama's LoadModelFromFile (llama/llama.go, v0.17.7:310) for any failure of llama.cpp's load: it names no
    # reason (the line before it in the server log does), so it ranks below every reason that line may give
    (re.compile(r"unable to load model: \S"), "notmem-ollama-load-failed"),
    # a crash by signal or a heap check: SIGSEGV (signal 11, exit 139 = 128 + 11, Windows 0xC0000005), SIGABRT
    # ("Aborted (core dumped)", IOT instruction, exit 134), glibc's heap checks ("double free or corruption")
    (re.compile(r"segmentation fault|\bsigsegv\b|\bsignal 11\b|signal \(11\)|exit(?:ed)? (?:with )?(?:code|status)[ :=]*13[49]\b"
                r"|exception 0xc0000005|access violation|double free|free\(\): invalid|corrupted (?:size|double-linked)"
                r"|\baborted(?: \(core dumped\))?\s*$|signal: abort|\bsigabrt\b|signal: aborted \(6\)|iot instruction"
                r"|\bcrash(?:es|ed)? with\b|\bcrashed sigsegv\b"
                r"|\bcount underflow\b"),  # a reference count that went below zero (a driver's or runtime's bug)
     "notmem-crash-signal"),
    (MLOCK, "notmem-survived-warning"),
    # a process stopped from outside, said by its own signal or exit status (signal(7): SIGINT 2, SIGTERM 15; a shell
    # and docker report a death by signal N as 128 + N):
    # - Python's KeyboardInterrupt closing a traceback: SIGINT's default handler raises it (Ctrl-C:
    #   kwonathan/language-models-trajectory-generators#2; round 63's l12), and vLLM's api_server raises
    #   KeyboardInterrupt("terminated") on SIGTERM while it starts (a Kubernetes liveness probe's kill, pasted in
    #   imroc/tke-guide's content/ai/llm.md at 020deb1);
    # - exit status 124, GNU timeout's own when the command timed out (coreutils timeout: "If the command times out,
    #   and --preserve-status is not set, then exit with status 124"; uutils/coreutils#11392; round 63's l11: "gen.py
    #   exited with code 124"), 130 (128 + SIGINT) and 143 (128 + SIGTERM: docker stop, docker-library/tomcat#146
    #   "Exited (143) 7 seconds ago"; immich-app/immich#17488), an IDE's "interrupted by signal 2: SIGINT";
    # - Python's CalledProcessError naming the child's signal ("died with <Signals.SIGTERM: 15>", subprocess.py's
    #   __str__), and bash's job report "Terminated" (strsignal(SIGTERM)), srun's "task 0: Terminated";
    # - a launcher that received the signal itself: torchrun's agent ("Received 15 death signal, shutting down
    #   workers", then "SignalException: Process N got signal: 15": determined-ai/determined#8915,
    #   pytorch/pytorch#150916; 2, Ctrl-C: MCG-NJU/RTD-Action#31; 1, SIGHUP, the terminal or ssh session closed:
    #   zai-org/ChatGLM2-6B#238), and Slurm's slurmstepd "*** JOB N ON host CANCELLED AT time ***" (scancel:
    #   qiskit-community/spank-plugins#17), "... DUE TO JOB REQUEUE" (facebookincubator/submitit#1708) — its
    #   "DUE TO NODE FAILURE" is no stop someone asked for, and its cgroup OOM kill says so on its own line.
    # The kernel's OOM killer sends SIGKILL: 137, "Killed", <Signals.SIGKILL: 9>, a dmesg line — read as memory
    # elsewhere; earlyoom / systemd-oomd's SIGTERM are named on their own lines, which outrank this one
    # (signals._KILL_KERNEL: linux-oom-killer). A "terminated" line that names SIGKILL, signal 9 or 137 ("terminated
    # by signal SIGKILL", systemd's "Main process exited, code=killed, status=9/KILL") is that kill, not a stop, and a
    # bare "Terminated" beside a kill signature elsewhere in the paste yields to it (classify: _settle_stop_beside_kill)
    (re.compile(r"^\s*keyboardinterrupt(?::.*)?$"
                r"|exit(?:ed)? (?:with )?(?:exit )?(?:code|status)[ :=]*(?:124|130|143)\b|\bexited \((?:124|130|143)\)"
                r"|interrupted by signal (?:2: sigint|15: sigterm)|died with <signals\.sig(?:int|term): \d+>"
                rf"|^\s*{TERMINATED_JOB}(?:\s+(?!.*(?:kill|signal 9\b|\b137\b))\S.*)?$"
                r"|line \d+:\s*\d+\s+terminated\b"
                r"|\btasks? [\d,-]+: terminated\b"
                r"|received (?:1|2|15|signals\.sig(?:hup|int|term)) death signal|\bgot signal: (?:1|2|15)\b"
                r"|\bcancelled at \S+ (?:\*\*\*|due to (?:time limit|preemption|job requeue)\b)"),
     "notmem-stopped"),
    (re.compile(r"ptx was comp\w+ with an unsupported toolchain|cudaerrorunsupportedptxversion"), "notmem-ptx-toolchain"),
    (re.compile(r"kernel image is (?:not available|invalid)|no kernel image|invalid device function|nobinaryforgpu"
                r"|unable to load kernel"), "notmem-no-kernel-image"),
    (re.compile(r"only supports \w+ gpus? or newer"), "notmem-unsupported-gpu-arch"),  # FlashAttention's arch check
    # the file names a model architecture this loader does not implement ("unknown model architecture: 'phi3'",
    # ComfyUI-GGUF's "Unexpected architecture type in GGUF file")
    # ... or a vision projector type its CLIP loader does not implement (llama.cpp clip.cpp: "clip_model_load: don't
    # support projector with: …", ollama#4925, round 44): the file's kind, refused before its tensors are read
    (re.compile(r"(?:unknown|unexpected|unrecognized|unsupported) (?:model )?architecture\b(?! \w*(?:gpu|cuda))"
                r"|(?:don't|do not|does not|doesn't) support projector\b|unsupported projector\b"),
     "notmem-unsupported-model-arch"),
    # the driver dropped the GPU (VK_ERROR_DEVICE_LOST, vulkan.hpp vk::DeviceLostError): a reset, not a full memory
    (re.compile(r"devicelosterror|error_device_lost|\bdevice (?:was )?lost\b"), "notmem-device-lost"),
    (re.compile(r"driver version is insufficient|cudaerrorinsufficientdriver"), "notmem-driver-insufficient"),
    # ... and ROCm's report of a GPU page fault ("Memory access fault by GPU node-1 (Agent handle: …) on address …
    # Reason: Page not present or supervisor privilege", ROCR-Runtime): an access to an address not mapped, the
    # same kind of failure (legacy-rocm-build#5777, round 35)
    (re.compile(r"illegal memory access|cudaerrorillegaladdress|device-side assert|index out of bounds"
                r"|memory access fault by gpu"
                r"|invalid __global__ (?:read|write)|without access enabled"),  # compute-sanitizer's report
     "notmem-illegal-memory-access"),
    # SIGILL: a build for newer CPUs (AVX/AVX2); Windows NTSTATUS 0xC000001D = WinError -1073741795
    (re.compile(r"illegal instruction|\bsigill\b|0xc000001d|-1073741795"), "notmem-illegal-instruction"),
    # MTLCommandBufferError other than Insufficient Memory (that one is the memory case)
    (re.compile(r"command buffer execution failed: (?!insufficient memory)"
                r"|kiogpucommandbuffercallbackerror(?!outofmemory)"), "notmem-metal-command-buffer"),
    # ggml's metadata arena, sized by the code: a model/library mismatch, not RAM or VRAM
    # ... and its scratch pool (chatglm.cpp, older ggml: "not enough space in the scratch memory pool (needed
    # 1357824000, available 1342177280)"), a fixed size the program chose for its intermediate tensors
    (re.compile(r"not enough space in the (?:context's |scratch )memory pool"), "notmem-ggml-context-pool"),
    # a pinned host allocation refused with a CUDA status other than cudaErrorMemoryAllocation ("out of memory"): the
    # driver or the OS said no — "invalid argument", or status 803 "system has unsupported display driver / cuda driver
    # combination" for every size down to 2.45 MiB (ollama#5517, round 44); llama.cpp falls back to ordinary memory
    (re.compile(r"os call failed or operation not supported|operation not supported on this os"
                r"|of pinned memory: (?!out of memory)[a-z]"), "notmem-pinned-unsupported"),
    # vLLM's start-up check that profiling used memory ("Error in memory profiling. Initial free memory A, current
    # free memory B"): asserted as free-before > free-after, so it fires only when free memory stayed or grew —
    # another process released memory while vLLM measured (ms-swift#3241, vllm#56830, round 44), not a shortage
    (re.compile(r"error in memory profiling\. initial (?:free|used) memory"), "notmem-vllm-profiling-free-grew"),
    (re.compile(r"failed to find (?:an? )?(?:free )?(?:space in the kv cache|(?:kv[ _-]?cache |memory )?slots?\b)"
                r"|increase kv cache size"),
     "notmem-kv-slots"),
    (re.compile(r"(?:runner|process|server) (?:process )?(?:has )?terminated:? (?:with )?exit (?:status|code)"
                r"|runner terminated\\*\"?\s*error=\\*\"?exit status|crashed without additional information"
                r"|\(exit code: -?\d+\)"), "notmem-runner-exit-status"),  # LM Studio prints "(Exit code: N)"
    (re.compile(r"installation failed with exit code|installer (?:failed|exited)|update failed with exit code"
                r"|terminating context: 0x8"), "notmem-installer-exit-code"),
    (re.compile(r"cuda setup failed|could not (?:find|load) \S+ (?:\S+ )?(?:cuda binary|native library)"
                r"|cannot open shared object file|libcudart\S* not found|undefined symbol"
                # an extension's build said not to match what is installed (DeepSpeed's "cpu_adam cuda is missing or
                # is incompatible with installed torch, only cpu ops can be compiled!", chemnlp#323, round 35)
                r"|\bis (?:missing or (?:is )?)?incompatible with (?:the )?installed\b"
                # a build that needs a file that is not there (a header, a library): "JIT requires cuda_fp8.h"
                r"|(?:requires?|missing|cannot find|not found:?)\W{0,3}[\w/.-]*\w\.(?:h|hpp|cuh|so|dll|dylib)\b"),
     "notmem-binary-mismatch"),
    # a command line the program's parser refused: Go's flag package ("flag provided but not defined: -ngl"),
    # Python's argparse ("error: unrecognized arguments: …"), Rust's clap ("error: unexpected argument '--x' found",
    # "error: invalid value 'True' for '--flag'"), click ("No such option: --x")
    (re.compile(r"flag provided but not defined|unrecognized arguments?:|unexpected argument '"
                r"|invalid value '[^']*' for '-|no such option:? -"), "notmem-bad-argument"),
    # docker compose / the docker CLI naming a service, container, image, network or volume it does not know ("no such
    # service: inference-text-client", "Error response from daemon: No such container: …"): the compose file or the
    # command names something that is not defined or not created, a configuration error
    (re.compile(r"\bno such (?:service|container|image|network|volume)\b"), "notmem-config"),
    # the listening port is taken (EADDRINUSE, errno 98; Windows WSAEADDRINUSE 10048, whose message Windows prints in
    # the system's language: "通常只允许每个套接字地址(协议/网络地址/端口)使用一次")
    (re.compile(r"address already in use|eaddrinuse|only one usage of each socket address|每个套接字地址"),
     "notmem-port-in-use"),
    (re.compile(r"connection (?:closed|reset|refused)|connectionreseterror|nccl.*(?:timeout|unhandled system error)"
                # ncclSystemError's own string (nccl.h ncclGetErrorString): a socket / system call failed
                r"|system call \(e\.g\. socket, malloc\) or external library call failed|ncclsystemerror"),
     "notmem-connection"),
    # a buffer whose size the code fixed in advance (FlashInfer's workspace, a TVM/MLC static region) overflowed
    (re.compile(r"in alignedallocator|in region that is \d+ ?bytes|attempted to allocate \d+ at offset \d+"),
     "notmem-fixed-arena"),
    # ROCm: queues/signals/threads could not be created (hsa.h 0x1008), raised before any model memory is asked for
    (re.compile(r"hsa_status_error_out_of_resources"), "notmem-rocm-resources"),
    # Windows NTSTATUS crash codes as an exit code (0xC0000135 DLL not found = 3221225781 = -1073741515…), except
    # 0xC0000017 STATUS_NO_MEMORY (3221225495 / -1073741801), which is a lack of memory
    (re.compile(r"exit(?:ed)? with (?:code|status) (?!3221225495\b|-1073741801\b|0xc0000017\b)"
                r"(?:3221\d{6}\b|-10737\d{5}\b|0xc0000\w{3}\b)"), "notmem-runner-exit-status"),
    # ggml's CUDA error footer naming a function that is not an allocator: a kernel or sync call failed
    (re.compile(r"current device: \d+, in function (?!\w*(?:alloc|pool))\w+"), "notmem-other-error"),
    # ggml-backend.cpp's preconditions on a tensor read or written (ggml_backend_tensor_set / _get / _memset and their
    # async forms: GGML_ASSERT(buf != NULL && "tensor buffer not set"), GGML_ASSERT(tensor->data != NULL && "tensor not
    # allocated")): the caller used a tensor that no allocator placed (a view left uninitialised, a state written before
    # its buffer exists); nothing is allocated there, and a buffer that failed to allocate says so first, in ggml's own
    # line (llama.cpp PR #25584, round 50: a view init skipped after a max_size split)
    (re.compile(r"\"tensor (?:not allocated|buffer not set)\""), "notmem-other-error"),
    # a weight file whose tensor shapes do not match the model code loading it: mlx's Module.load_weights
    # (mlx/nn/layers/base.py: "Expected shape {v.shape} but received shape {v_new.shape} for parameter {k}"), as
    # PyTorch's load_state_dict "size mismatch for" is answered (session 21, diagnose21c: scoring/round70_families.txt,
    # 8 tuning texts of the family, all not memory)
    (re.compile(r"expected shape \([^)]*\) but received shape \([^)]*\) for parameter"), "notmem-other-error"),
)
# exit statuses that are a lack of memory after all: SIGKILL (137) and Ollama's "signal: killed"
EXIT_IS_KILL = re.compile(r"exit (?:status|code)[ :=]*137\b")


def not_memory_reason(low: str) -> str | None:
    """The entry id of the first reason in NOT_MEMORY the line gives, or None."""
    for rx, entry_id in NOT_MEMORY:
        if rx.search(low):
            return entry_id
    return None

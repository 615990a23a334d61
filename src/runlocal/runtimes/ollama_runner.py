"""The command line an Ollama release starts its model process with, as its log prints it ("starting llama server" /
"starting runner" cmd=…), for the plan's assumption line: before v0.30.0 that is Ollama's own runner, not llama-server.

Read in ollama/ollama llm/server.go NewLlamaServer at each tag (git show vX:llm/server.go):
- before v0.5.2 (v0.1.32–v0.5.1): exec.Command(<runners dir>/<library>/ollama_llama_server, params…, --port N), with
  "--embedding" before v0.4.1, "--log-disable" before v0.3.14 and no "--parallel" before v0.1.33 (v0.1.32 lines
  162–233; v0.1.33 line 206 appends it, 34b9db5af); before v0.1.32 Ollama started no ollama_llama_server
  (runtimes/ollama_early.py launch_before_own_process);
- v0.5.2–v0.5.7: finalParams := []string{"runner"} + params + --port, run by the server GetAvailableServers picks (the
  same ollama_llama_server, or the ollama binary for the built-in CPU runner);
- v0.5.8–v0.11.4: exec.Command(exe, "runner", ["--ollama-engine" where the Go engine loads it,] params…, "--port", N),
  exe the ollama binary itself; params in this order (v0.9.0 lines 170–337): --model, --ctx-size num_ctx × parallel
  (server/sched.go: opts.NumCtx = origNumCtx × numParallel), --batch-size, --n-gpu-layers (num_gpu, or the estimate's
  layers), --threads (the physical cores), --flash-attn and then --kv-cache-type (OLLAMA_KV_CACHE_TYPE, only with
  flash attention), --no-mmap (a CPU-only load), --parallel, --tensor-split (the estimate's per-GPU layer counts),
  --mmproj (llama.cpp runner; after --lora before v0.6.0);
- v0.11.5–v0.24: "runner [--ollama-engine] --model <blob> --port N" only (NewLlamaServer; StartRunner from v0.12.7);
  the rest goes to the runner in its /load request (llm/server.go LoadRequest: KvSize = num_ctx × parallel,
  BatchSize, Parallel, FlashAttention, KvCacheType, NumThreads, GPULayers);
- v0.30.0+: llama-server (llm/llama_server.go startLlamaServer), said by runtimes/ollama.py itself.
"""

from __future__ import annotations

from .base import Settings
from .ollama_projector import OLLAMA_REF

RUNNER_FROM = (0, 5, 2)          # "runner" as the first argument (v0.5.1: none)
OLLAMA_EXE_FROM = (0, 5, 8)      # exec.Command(exe, …): the ollama binary itself
LOAD_REQUEST_FROM = (0, 11, 5)   # the options in the /load request, not on the command line
START_RUNNER_FROM = (0, 12, 7)   # the command built in llm/server.go StartRunner
FLASH_TYPE_FROM = (0, 13, 4)     # LoadRequest.FlashAttention an ml.FlashAttentionType (Auto / Disabled / Enabled), not a bool
MMPROJ_LAST_FROM = (0, 6, 0)     # --mmproj moved after --multiuser-cache
EMBEDDING_UNTIL = (0, 4, 1)      # "--embedding" in params before v0.4.1
LOG_DISABLE_UNTIL = (0, 3, 14)   # "--log-disable" before v0.3.14
PARALLEL_FLAG_FROM = (0, 1, 33)  # "--parallel" appended from v0.1.33 (34b9db5af)


def runner_line(key: tuple[int, ...], text: str, *, go_engine: bool, ctx_total: int, parallel: int, batch: int,
                ngl: int | None, flash: str, kv_type: str, cpu_load: bool, tensor_split: tuple[int, ...] = (),
                projector: bool = False) -> str:
    """The assumption line for Ollama ``text`` (key: its numbers) before v0.30.0: the runner's command as logged, with
    the plan's values (<blob>, <cores>, <port>: what the machine fills in)."""
    engine = ["--ollama-engine"] if go_engine else []
    where = f"ollama/ollama v{text} llm/server.go {'StartRunner' if key >= START_RUNNER_FROM else 'NewLlamaServer'}"
    if key >= LOAD_REQUEST_FROM:
        fa = ({"on": "Enabled", "off": "Disabled"}.get(flash, "Auto") if key >= FLASH_TYPE_FROM
              else str(flash == "on").lower())
        load = (f"KvSize {ctx_total}, BatchSize {batch}, Parallel {parallel}, FlashAttention {fa}"
                + (f", KvCacheType {kv_type}" if flash != "off" and kv_type != "f16" else "")
                + (f", GPULayers for {ngl} layers" if ngl else ""))
        return (f"{where}: Ollama's own runner, started as `ollama {' '.join(['runner', *engine])} --model <blob> "
                f"--port <port>` and given the rest in its /load request (LoadRequest: {load})")
    mmproj = ["--mmproj", "<projector blob>"] if projector and not go_engine else []
    params = ["--model", "<blob>", "--ctx-size", str(ctx_total), "--batch-size", str(batch)]
    params += ["--embedding"] if key < EMBEDDING_UNTIL else []
    params += ["--log-disable"] if key < LOG_DISABLE_UNTIL else []
    params += ["--n-gpu-layers", str(ngl)] if ngl is not None else []
    params += mmproj if key < MMPROJ_LAST_FROM else []
    params += ["--threads", "<cores>"]
    params += (["--flash-attn"] + (["--kv-cache-type", kv_type] if kv_type != "f16" else [])) if flash == "on" else []
    params += ["--no-mmap"] if cpu_load else []
    params += ["--parallel", str(parallel)] if key >= PARALLEL_FLAG_FROM else []
    params += ["--tensor-split", ",".join(map(str, tensor_split))] if tensor_split else []
    params += mmproj if key >= MMPROJ_LAST_FROM else []
    exe = "ollama" if key >= OLLAMA_EXE_FROM else "ollama_llama_server"
    lead = ["runner", *engine] if key >= RUNNER_FROM else []
    return f"{where}: Ollama's own runner, started as `{' '.join([exe, *lead, *params, '--port', '<port>'])}`"


def launch_words(release: str | None, go_engine: bool, s: Settings, ctx_total: int, batch: int, ngl: int, flash: str,
                 tensor_split: tuple[int, ...], projector: bool) -> str:
    """The plan's launch assumption: llama-server's arguments for the current release and v0.30+, else the runner's
    command that release logs (runner_line). ``ngl``: the layers on the GPUs (0: a CPU load)."""
    from .versions import OLLAMA_LLAMA_SERVER_FROM, parse_version

    version = parse_version("ollama", release) if release else None
    if version is None or version.at_least(*OLLAMA_LLAMA_SERVER_FROM):
        return (f"{OLLAMA_REF}: llama-server launched with -c {ctx_total:,} -np {s.parallel} -b {batch} -ub {batch}, "
                f"flash attention {flash}")
    from .ollama_early import launch_before_own_process

    if early := launch_before_own_process(version.key, version.text):
        return early
    asked = s.llamacpp.n_gpu_layers
    # --n-gpu-layers: the estimate's layers, or num_gpu as set (0 too: a CPU load); unset on a CPU load
    shown = ngl if ngl > 0 else asked if asked is not None and asked >= 0 else None
    return runner_line(version.key, version.text, go_engine=go_engine, ctx_total=ctx_total, parallel=s.parallel,
                       batch=batch, ngl=shown, flash=flash, kv_type=s.cache_type_k, cpu_load=ngl <= 0,
                       tensor_split=tensor_split, projector=projector)


__all__ = ["launch_words", "runner_line"]

"""An Ollama release before v0.30.0 says the command its own runner starts with, not the current release's llama-server
line (fixes19c, left: `ollama==0.9.0` plans printed "llama-server launched with -c … -np … -b … -ub …").

ollama/ollama v0.9.0 llm/server.go NewLlamaServer (git show v0.9.0:llm/server.go, lines 170–337, transcribed):
    params := []string{"--model", modelPath, "--ctx-size", strconv.Itoa(opts.NumCtx),
                       "--batch-size", strconv.Itoa(opts.NumBatch)}
    if opts.NumGPU >= 0 { params = append(params, "--n-gpu-layers", strconv.Itoa(opts.NumGPU)) }
    ... "--threads" (GetOptimalThreadCount) ...
    if fa { params = append(params, "--flash-attn"); if kvct != "" && f.SupportsKVCacheType(kvct) {
            params = append(params, "--kv-cache-type", kvct) } }
    if ... (gpus[0].Library == "cpu" && opts.UseMMap == nil) ... { params = append(params, "--no-mmap") }
    params = append(params, "--parallel", strconv.Itoa(numParallel))
    if estimate.TensorSplit != "" { params = append(params, "--tensor-split", estimate.TensorSplit) }
    finalParams := []string{"runner"}; if textProcessor != nil { finalParams = append(finalParams, "--ollama-engine") }
    finalParams = append(finalParams, params...); finalParams = append(finalParams, "--port", strconv.Itoa(port))
    cmd: exec.Command(exe, finalParams...)  — logged as slog.Info("starting llama server", "cmd", s.cmd)
and server/sched.go: pending.opts.NumCtx = pending.origNumCtx * numParallel. From v0.11.5 the command is only
"runner [--ollama-engine] --model <blob> --port <port>" and the options go in the /load request (LoadRequest)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check


def _launch(**kw) -> str:
    plan = check(CheckRequest(use_measurements=False, **kw))[0]
    return next(a for a in plan.allocation.assumptions if "runner" in a or "llama-server launched" in a)


def test_v0_9_0_prints_its_runner_command():
    # llama-3.1-8b Q4_K_M on a 4090: num_ctx 4096 (v0.6.7–v0.15.4), num_batch 512, every layer (32 + output = 33)
    line = _launch(model="llama-3.1-8b", runtime="ollama==0.9.0", gpu="rtx-4090")
    assert line.startswith("ollama/ollama v0.9.0 llm/server.go NewLlamaServer")
    assert ("`ollama runner --model <blob> --ctx-size 4096 --batch-size 512 --n-gpu-layers 33 --threads <cores> "
            "--parallel 1 --port <port>`") in line
    assert "llama-server" not in line


def test_flash_attention_kv_type_and_parallel_ride_on_the_command():
    line = _launch(model="llama-3.1-8b", runtime="ollama==0.9.0", gpu="rtx-4090", parallel=2, flash_attn="on",
                   kv_cache="q8_0")
    # --ctx-size num_ctx × parallel = 4,096 × 2; --kv-cache-type only after --flash-attn
    assert "--ctx-size 8192 " in line and "--flash-attn --kv-cache-type q8_0 --parallel 2 --port" in line


def test_a_cpu_load_has_no_gpu_layers_and_no_mmap():
    line = _launch(model="llama-3.1-8b", runtime="ollama==0.9.0", gpu="none", ram="32G")
    assert "--n-gpu-layers" not in line and "--threads <cores> --no-mmap --parallel 1" in line


def test_two_gpus_pass_the_estimates_tensor_split():
    plan = check(CheckRequest(model="llama-3.1-70b", runtime="ollama==0.9.0", gpu="2xrtx-3090",
                              use_measurements=False))[0]
    line = next(a for a in plan.allocation.assumptions if "runner" in a)
    # the estimator's own words (llm/memory.go EstimateGPULayers, runtimes/ollama_estimate.py) name the same split
    assert any("--n-gpu-layers 81, --tensor-split 41,40" in a for a in plan.allocation.assumptions)
    assert "--n-gpu-layers 81 " in line and "--parallel 1 --tensor-split 41,40 --port <port>" in line


def test_the_go_engine_is_asked_for_with_its_flag():
    # gemma3 is in v0.9.0's KV.OllamaEngineRequired (runtimes/ollama_engine.py): textProcessor != nil
    assert "`ollama runner --ollama-engine --model <blob>" in _launch(model="gemma-3-12b", runtime="ollama==0.9.0",
                                                                     gpu="rtx-4090")


def test_from_v0_11_5_the_options_go_in_the_load_request():
    line = _launch(model="llama-3.1-8b", runtime="ollama==0.11.5", gpu="rtx-4090")
    assert "`ollama runner --model <blob> --port <port>`" in line and "LoadRequest: KvSize 4096, BatchSize 512" in line
    assert "StartRunner" in _launch(model="llama-3.1-8b", runtime="ollama==0.12.7", gpu="rtx-4090")


def test_releases_before_the_runner_subcommand():
    line = _launch(model="llama-3.1-8b", runtime="ollama==0.4.0", gpu="rtx-4090")
    # v0.4.0: its runners' ollama_llama_server, "--embedding" still in params (dropped in v0.4.1), no "runner"
    assert "`ollama_llama_server --model <blob> --ctx-size 2048 --batch-size 512 --embedding --n-gpu-layers" in line


def test_the_current_release_keeps_llama_servers_line():
    assert "llama-server launched with -c " in _launch(model="llama-3.1-8b", runtime="ollama", gpu="rtx-4090")

"""The phase of a failure: whether memory ran out while the model was loading or starting up (the load) or while it
was running — a training step, an evaluation, a generation, a served request (the run).

The rule (one rule, session 11, diagnose22, from every phase miss of rounds 7-26): the phase is what asked for the
memory, read from the evidence nearest to the failure, in this order —
  1. the failing line itself (its own load or run words, the clause that says memory ran out: ``phase_of_line``);
  2. the allocator's report of who asked: a graph node or op being computed (ONNX Runtime's "while running Mul node",
     TensorFlow's op kernel and BFC refusals, cuBLAS's workspace inside a GEMM, MindSpore's kernel output for a graph
     node) is the run; a loader, a builder or a
     pool sized at start-up (from_pretrained, load_state_dict, trtllm-build, allocatePools) is the load (RUN, LOAD);
  3. the program's lifecycle around it, in the lines kept before and after: load lines, a line saying the load was
     over (LOADED), the frames of a traceback (forward, backward, generate, an inference call, a batch of inputs
     through a chain or a model: ``chain.batch(``, ``model.predict(``), a progress counter
     read by what its label counts (steps and items are the run, files and shards the load: ``progress_phase``), a
     served request or a server's batch handler, usage said to have grown to a figure since start-up;
  4. the numbers: one refused block of a quarter of the card or more is activations of an input, not a weight tensor
     (cuda_oom.refine_cuda_oom), and one array refused larger than any model's largest weight array, where the card's
     size is not said (XLA's refusals: cuda_oom.MAX_WEIGHT_ARRAY), and more allocated than twice the largest weights of
     a BERT-family encoder the paste names (cuda_oom.named_encoder_weights, round 32's, diagnose28);
  5. no evidence at all: the load, because that is what the threads say for most such texts (of the tuning set's
     generic out-of-memory errors with none of the evidence above, rounds 1-28: 110 at the load, 15 at the run;
     rounds 1-26: 111 and 10).
Words are not the rule: each pattern below is one form of evidence 1-3, and a new form is added to its kind (round
27's, diagnose23: a kernel's output, a batch call, "run inference"; round 28's, diagnose24: XLA's buffer assignment of
an executing program, a replica's execution, an inference call failing, a program said to have run for a while,
accelerate's ``prepare_model``; round 29's, diagnose25: a web UI's run button clicked, an image the user tried to make,
a request said to be received, the models said to load fine; round 30's, diagnose26: a cuDNN call, a workflow said
to be executing; round 31's, diagnose27: XLA's compiled program executing, a pipeline's call on one input; and, as
numbers, one XLA array refused larger than any model's largest weight array, cuda_oom.MAX_WEIGHT_ARRAY; session 22's
diagnose22: loaders and start-up steps in their own words and frames — exllamav2's autosplit, nn.Module._apply,
TurboMind's weights, MLC's chat module, TensorRT's tactics, TGI's warm-up).
A batch size said in prose is no evidence: the
threads put it at both phases (PIXOR#31, llama#455). Read by
the scanner around a generic out-of-memory (cuda_oom.refine_cuda_oom). Split from signals.py (session 10) to keep both
modules under ~800 lines; signals re-exports these names."""

from __future__ import annotations

import re

LOAD = re.compile(
    r"from_pretrained|load_state_dict|_load_pretrained_model|load_checkpoint|checkpoint shards|load_weights"
    r"|load_model|get_model\(|initialize_model|model_loader|modelloader|init_device|profile_run|_dummy_run"
    r"|_dummy_sampler_run|warming up|warmup|warm up|profiling|determine_num_available_blocks|determine_available_memory"
    r"|initialize_kv_cache|initialize_cache|capture_model|capturing cuda ?graph|cuda ?graph capture|capture cuda graph"
    # exllamav2's KV cache allocating its tensors as it is built (ExLlamaV2Cache*(model) -> cache.py's
    # create_state_tensors), once, at start-up after the weights: the load by this module's definition (session 21,
    # diagnose21c: scoring/round70_families.txt, 3 tuning texts, all labelled the load)
    r"|create_state_tensors|exllamav2cache\w*\("
    r"|torch\.load|set_module_tensor_to_device|dispatch_model|load_single_module|loading (?:the )?(?:model )?weights|load_tensors"
    r"|\.to\(device|model\.to\(|model\.cuda\(|t\.cuda\(|\.load\(\)|exllamav\d+_hf\.py|_loader\b|weighs_to_device"
    # start-up said in words: "failed to initialize executor", "Engine core initialization failed", TensorRT's
    # "Engine building failed" / "Failed to deserialize cuda engine"
    r"|failed to initiali[sz]e|initiali[sz]ation failed|creation failed|could not be created|engine build"
    r"|build(?:ing)? (?:the )?(?:tensorrt )?engine|deseriali[sz]e|node type:\W*\w*load"
    r"|\w*builder\w*(?:config)?::"  # a builder's API (TensorRT's IBuilderConfig::): the engine is being built
    r"|\bfail\w* to deploy"  # "failure to deploy … due to OOM": a start-up
    # the program said not to have started, or to fail as it starts ("Shard 0 failed to start", "can't start",
    # "when launching start-webui", "when starting the tabby server"): the start-up is the load by this module's
    # definition (session 17: 6 tuning texts say so, all labelled the load, 3 of them reaching the no-evidence step)
    r"|\bfail(?:ed|s)? to start\b|\b(?:can ?not|can't|won't|unable to) start\b|\bstart-?up (?:failed|error)"
    r"|\b(?:at|on|during) start-?up\b|\b(?:when|while) (?:starting|launching)\b"
    r"|trtllm-build\b|\bconvert_checkpoint\b"
    # a checkpoint being restored (JAX / Flax / Orbax, TensorFlow: "Restoring checkpoint from …", "Restored from
    # checkpoint"): the weights being placed (session 21, diagnose21: the contrast that keeps an XLA refusal at the
    # load now that another framework's line with no phase stated is the step)
    r"|\brestor(?:e|es|ing|ed)\s+(?:(?:the|a|from)\s+)?checkpoint"
    # TensorRT-LLM's KV cache manager allocating its block pools (KVCacheManager::allocatePools), once, at start-up
    r"|allocatepools\b"  # TensorRT-LLM building an engine / converting a checkpoint
    # the failure said to come while the model loads, in prose ("CUDA OOM when loading large models", "在load模型时",
    # "加载模型时"); "加载完" ("finished loading") is the opposite and is read by LOADED
    r"|\b(?:when|while|during) loading\b|load\s*模型"
    # 加载 "load", but not 加载完 "finished loading" (LOADED), nor loading data for the application (a knowledge base,
    # documents, a dataset: "加载11kb的知识库" is a RAG app reading files, not the model's weights)
    r"|加载(?!完|好|成功)(?![^，。,\n]{0,10}?(?:知识库|文档|数据集))"
    # a pipeline or a deployment being built (transformers' pipeline(...), DeepSpeed-MII's mii.deploy(...))
    r"|\bpipeline\(|creat\w* (?:a |the )?pipeline|\bdeploy\("
    # vLLM's offline engine being built (``LLM(model=…)`` loads the weights and profiles), and a bare ``load(…)`` call
    # (the model script's own loader: pyllama's ``generator = load(ckpt_dir, …)``), not ``json.load(`` / ``x.load(``
    r"|\bllm\(model\s*=|(?<![\w.])load\("
    # accelerate's Accelerator.prepare_model in a traceback's frame: it places the model on its device (model.to(
    # device), accelerate/accelerator.py) before the first step, so a failure inside it is the load even in a trainer
    # (kohya_ss#369, round 28)
    r"|\bprepare_model\b"
    # vLLM's limit on multimodal items per prompt: its start-up profile run is sized by it (the dummy inputs carry that
    # many images and videos: vllm/multimodal/profiling.py; docs/configuration/conserving_memory.md, "Multi-modal input
    # limits": fewer items per prompt reduce the memory footprint), so an out-of-memory said with it came at start-up
    # (vllm#22173, round 42), whatever frame it came through (the profile run goes through execute_model too)
    r"|\blimit[_-]mm[_-]per[_-]prompt\b"
    # KoboldAI's API endpoint that loads a model: PUT /api/v1/model (or /api/latest/model; aiserver.py put_model, "Load
    # a model"), under the same out-of-memory wrapper as its generate endpoints (REQUEST_WRAPPER)
    r"|\bput\b[^\n]{0,40}?/api/(?:v1|latest)/model\b"
    # -- loaders and start-up steps in their own words (session 22, diagnose22; scoring/phase_unstated_load_forms22.txt:
    # 20 tuning texts labelled the load answered "phase not stated" carry one, no tuning text labelled the run does) --
    # exllamav2 placing its modules across the cards (model.py: load_autosplit_gen raises "Insufficient VRAM for model
    # and cache", a gpu_split load asserts "Insufficient space in device allocation" when a module's footprint fits no
    # card left; exllamav3's "... in split for model and cache") and a traceback's frame inside a function named load*
    # (exllamav2's linear.py ``in load``): the weights being placed. Only loaders' names: the tuning texts' frames
    # (load, load_model*, load_pretrained_model, load_state_dict, load_checkpoint*, load_quant, load_gen,
    # load_single_weight, load_tensor, load_torch_file, load_llama_from_model_settings, load_adapter, load_clip), not
    # ``json.loads`` / ``pickle.loads`` nor a request handler's ``load_image`` / ``load_data`` / ``load_batch``, which
    # run after the load (review22b #1)
    r"|load_autosplit|insufficient vram (?:in split )?for model and cache|insufficient space in device allocation"
    r"|\bin load(?:_gen|_\w*?(?:model|pretrained|state_dict|checkpoint|ckpt|weights?|tensors?|quant|autosplit|adapter"
    r"|lora|clip|llama|torch_file)\w*)?\s*$"
    # the load said to have failed ("could not load model (no success): Unexpected err=OutOfMemoryError", LocalAI's
    # model loader relaying its backend's LoadModel), around an out-of-memory: that is when it ran out
    r"|\b(?:could not|couldn't|failed to|unable to) load (?:the )?model\b"
    # PyTorch moving or casting a module's weights (torch/nn/modules/module.py: ``_apply`` applies ``.to`` / ``.cuda``
    # / ``.half`` to each parameter, ``param_applied = fn(param)``, ``return t.to(``) and a weight tensor being made
    # (``Parameter(torch.Tensor(out, in))`` in a layer's constructor): the model being placed
    r"|param_applied = fn\(param\)|\bin _apply\s*$|return t\.to\(|parameter\(torch\.(?:tensor|empty)\("
    # LMDeploy's TurboMind making each card's weights and model instance (turbomind.py _create_weight_func ->
    # create_shared_weights, _create_model_instance) and LLaVA's loader (llava/model/builder.py load_pretrained_model,
    # transformers' _load_pretrained_model above): start-up
    r"|create_shared_weights|_create_weight_func|_create_model_instance|load_pretrained_model"
    # MLC LLM's chat module loading a model (ChatModule(...) -> LLMChat::Reload; "Initializing the chat module") and
    # WebLLM's engine reload ("Device was lost during reload"): the weights being placed
    r"|llmchat::reload|chatmodule\(|initiali[sz]ing the chat module|\bduring reload\b"
    # TensorRT's builder timing its tactics ("Skipping tactic 2 due to insufficient memory", "Tactic Device request:
    # 172032MB Available: 45623MB"): an engine being built; CUDA graphs captured, hyphenated ("crashes during
    # CUDA-graph capture"); TGI's warm-up refusal ("Not enough memory to handle 16000 total tokens with 2 prefill
    # tokens", server/text_generation_server/models/flash_causal_lm.py warmup): the start-up
    r"|skipping tactic|tactic device request|cuda-graphs? capture|captur\w* cuda-graphs?"
    r"|not enough memory to handle \d+ (?:total|prefill) tokens"
    # the user asking whether the card is enough to load it ("Is 48 GB not enough to load the model?"), or saying it
    # cannot ("not able to load"); "was able to load" is the load that worked (LOADED, review22b #1)
    r"|\benough to load\b|\bnot able to load\b")
# an input said to grow until the failure ("When `seq_len` get larger and larger … finally gets OOM", "Inference with inputs
# with sequence length increased will cause OOM", intel-extension-for-pytorch#489): the model had loaded and ran, so
# these words are both the run and the load said to be over (LOADED)
GROWN_WORDS = (r"(?:seq_len|sequence length|input length|context length|prompt length|input size)`?\s*"
               r"(?:gets?|grows?|becomes?|is)\s+(?:larger|longer|bigger)"
               r"|(?:seq_len|sequence length|input length|context length|prompt length)s?\s+(?:is |are |was |were )?increas")
# a program said to have run for minutes or hours before the failure, the verb first ("crashes with `CUDA error: out of
# memory` … after running ~30 min to ~3 h of varied unique prompts", llama.cpp#22638, round 42): it had loaded and was
# serving, so these words are both the run and the load said to be over (LOADED), like GROWN_WORDS
# ... or a number of inputs said to have been served one after another before it ("连续执行10张图片（不是并发）就报"
# "ran ten images in a row, not concurrently, and got", Qwen3-VL#1044, round 44; "after 5 requests in a row"): the
# same — the model had loaded and each input before the failing one went through
RAN_FOR_WORDS = (r"\bafter running (?:for )?(?:about |around |over |~)?\d+(?:\.\d+)?\s?(?:min(?:ute)?s?|h(?:ours?|rs?)?)\b"
                 r"|连续(?:执行|运行|推理|处理|请求|生成)了?\s*\d+\s*(?:张|次|个|条|轮)"
                 r"|\b\d+ (?:requests|images|prompts|generations|queries) in a row\b")
# the runtime's own word that the model had loaded and requests were being served, in Ollama's server log: "llama
# runner started in 1.51 seconds" (llm/server.go WaitUntilRunning, logged once the runner's health status is ready,
# after the weights, the KV cache and the compute buffers were allocated), and "POST predict: …" (llm/server.go
# Completion wraps the error of its request to the runner's /completion endpoint so, and sends it only after
# checking that the runner's status is ready: "the client's request EOF" when the runner died serving it). A ggml
# out-of-memory after these came from a request (ollama#7733, #8182, round 43): both the run and the load said to
# be over (LOADED), like RAN_FOR_WORDS. llama.cpp's server says the same in its own words once the model has loaded
# ("main: server is listening on http://… - starting the main loop", then "srv update_slots: all slots are idle":
# tools/server/server.cpp logs them after load_model; Ollama's older runner, "Starting llama main loop")
# Being log lines, they say so only for what came after them: one printed after the failing line (a paste that puts
# the error on top, a runner started again later) says nothing of it (classify reads SERVING only up to that line)
SERVING_WORDS = r"\bllama runner started in\b|\bpost predict\b|\bstarting (?:the |llama )?main loop\b|\ball slots are idle\b"
SERVING = re.compile(SERVING_WORDS)
RUN = re.compile(
    r"generat\w*\(|generation\b|generat(?:or|ing)\b|engine_step|engine_loop|busy_loop|execute_model|execution step"
    r"|_model_forward|attention|\battn|sdpa"
    r"|scaled_dot_product|past_key_value|softmax|\bbaddbmm|\bmatmul|backward\(|autograd|training_step|train_step"
    r"|mistralrs_core::engine"  # mistral.rs's step loop, like vLLM's engine_step
    r"|prefill(?![ _-]?(?:tokens|chunk))|\bdecode\b|sample_tokens|\bk?sampler\w*|logits|/completions"
    r"|/generate|received request|in forward|processing prompt|prompt processing|compute_logprobs"
    # the server is up (a model that loaded and serves), or a training loop (spaCy/trainer saving its best model)
    r"|serving on\b|listening on\b|model loaded\b|\bepoch\b|saving (?:the )?(?:final )?best model"
    # text-generation-webui's per-request line ("Output generated in 6.34 seconds"); a ComfyUI error report's
    # node (a loader node is start-up, any other node is a graph run)
    r"|output generated in\b|node type:\W*(?!\w*load)\w"
    # vLLM V1's API server losing its engine while it streamed outputs ("AsyncLLM output_handler failed": the
    # handler raises EngineDeadError once the started EngineCore's busy loop died; an engine that fails at start-up
    # ends instead in "Engine core initialization failed", v1/engine/core_client.py), club-3090#16, round 45
    r"|\boutput_handler failed\b"
    # an app's request wrapper that relays the runtime's OOM: xinference's ModelActor ("Model actor is out of memory,
    # model id: …", xinference/core/model.py _handle_oom_error / _call_wrapper around generate, chat, rerank,
    # embedding calls) — xinference#3837, round 46. KoboldAI's wrapper is REQUEST_WRAPPER below
    r"|\bmodel actor is out of memory\b"
    # a prompt already tokenised for the model ("Prompt tokens: 8", a ComfyUI vision node's log before it runs the
    # batch, comfyui-pixtral-8) and llama-perplexity's pass over its chunks ("calculating perplexity over 565
    # chunks", tools/perplexity/perplexity.cpp, printed after the model and context are made; llama.cpp PR#14939):
    # the run, round 46
    r"|\bprompt tokens:\s*\d|\bcalculating perplexity over\b"
    # training (a fit() call, a trainer, "train_x.py", an iteration counter), image generation (txt2img, a UNet's
    # denoising steps), a serving engine's in-flight batching (TensorRT-LLM's batch_manager)
    r"|\.fit\(|\btrain(?:er|ing|_\w*)?\b|\biter(?:ation)?\W{1,3}\d|txt2img|img2img|\bunet\b|denois"
    # ... said in Chinese: 在训练 "while training" (在训练RetinaFace时: insightface#1240, round 37, diagnose31), 训练时 /
    # 训练中 / 训练过程 "during training". Not 训练 alone: a question about what training needs ("训练和推理大概需要多少
    # 显存？") or a trained model (训练好的, 预训练) says nothing ran
    r"|在训练|训练(?:时|中|过程|的时候|期间)"
    # gradient boosting's training: XGBoost's tree updaters (src/tree/updater_*.cc, plugin/updater_gpu; "gpu_hist")
    # build each tree of a boosting round ("boosting round 0") — the run (xgboost#2019, #8484: round 36, diagnose30)
    r"|\bupdater_\w|\bgpu_hist\b|\bboosting round\b"
    # a serving benchmark (sglang.bench_serving, vLLM's benchmark_serving, "vllm bench serve") or a request whose
    # input size is stated ("a request with around 400k input", "at 200K tokens", "外推至 200K"): requests are running
    r"|bench_serving|benchmark_serving|bench serve|\bbenchmark(?:_\w+)?\.py\b"
    # ... "processing actual ~128k request" (ollama#6741, round 45)
    r"|\b\d+(?:\.\d+)?\s?k\s+(?:input|tokens?|context|prompt|requests?)\b"
    r"|(?:\bat|\bwith|\bto|至)\s*~?\d+(?:\.\d+)?\s?k\b(?![-_.])"
    r"|sampling steps|batch_manager|in-?flight"
    # memory that grows over requests (a leak, "climbs to ~11.9 GB over 3 requests") or a benchmark being run: the
    # model had loaded and requests were served
    r"|\bbenchmarking\b|\bleak(?:s|ed|ing)?\b|\bover \d+ (?:requests|calls|queries|prompts|turns|generations)\b"
    r"|\bbetween (?:\w+ )?(?:calls|requests|queries|generations)\b"
    # ... or after many calls to a served model ("after running hundreds of calls", "调用服务后": after calling the
    # service; round 24's infinity#517 and xinference#516, session 10 diagnose20)
    r"|\bafter (?:running |sending |making )?(?:hundreds|thousands|dozens|many|several|\d+) (?:of )?"
    r"(?:api )?(?:calls|requests|queries|prompts|generations)\b|调用(?:服务|接口|模型)后"
    # a chat turn typed at a CLI ("<human>: …", "User: …", Ollama's ">>> …") and an evaluator that starts inferring:
    # the model is loaded and answering
    r"|^\W{0,2}<?(?:human|user)>?:\s*\S|^>>> \S|start\w* inferenc|\binferencing\b|\brun(?:s|ning)? (?:an? |the )?inferenc"
    r"|^\W*time taken:"  # a web UI's summary after a generation job ("Time taken: 9.1 sec.")
    # an API's error object (OpenAI-compatible servers answer a failed request with "object": "error"): the failure
    # came back as the answer to a request, so the model was loaded and serving
    r"|\"object\\?\":\s*\\?\"error\\?\""
    # an input that grew until the failure ("when the tokens reach 6k", "当token达到6k时"): the phase is the run
    r"|(?<![a-z])tokens?\s*(?:reach(?:es|ed)?|exceed(?:s|ed)?|达到|超过)\s*\d"
    # ... or a context length named as the threshold of the failure ("will crash for any context length > 29000"):
    # the input grows while serving, the model had loaded
    r"|(?:context|prompt|input|sequence|seq)[ _](?:length|len|size|window)s?\s*(?:>=?|above|over|exceed\w*|beyond|past"
    r"|longer than|goes? (?:above|over|past))\s*~?\d"
    r"|\blength of (?:the |a |my )?(?:prompt|input|context)s? (?:exceed\w*|is (?:over|above|longer than)|goes? over)\s*~?\d"
    # questions or requests counted before the failure ("after about 3 questions", "大约3个问题后", "asked 5 questions"),
    # or one query run against a server that started ("当跑一条短query时" "when running one short query"): requests
    r"|\bafter (?:about |around |~)?\d+ (?:questions|prompts|requests|messages|turns|queries|calls)\b"
    r"|\d+\s*个?\s*(?:问题|请求|对话)\s*(?:后|之后|以后)|(?:询问|提问|问了?)\s*(?:\d+|几|一)?\s*个?问题"
    # a served model called a number of times before the failure ("访问了大概100次" "called about 100 times", "每50-100次就会
    # 遇到" "every 50-100 calls it hits this"; chinese-llama-alpaca-2#532, round 22): requests to a loaded model. Only with
    # a verb of calling a server (访问 visit, 调用 call, 请求 request): "重试3次" (retried) or "运行了3次" (ran the script
    # 3 times) are reruns, not requests
    r"|(?:访问|调用|请求)了?\s*(?:大概|大约|约|将近|差不多)?\s*\d+\s*多?\s*次"
    r"|每\s*(?:大概|大约|约)?\s*\d+(?:\s*[-~～到至]\s*\d+)?\s*次(?:访问|调用|请求)?\s*(?:就|都|会)"
    r"|(?:跑|运行|发送?|\brun(?:ning)?|\bsend(?:ing)?|\bsent)\s*(?:一条|一个|an? |one )?\s*(?:短|长|short |long )?"
    r"(?:query|queries|请求|prompt)"
    # a web server that came up (Uvicorn's "Uvicorn running on http://…") and a Triton attention kernel's forward
    # (_fwd_kernel, LightLLM's router loop_for_fwd): the model had loaded and a request ran
    r"|uvicorn running on|running on https?://|\b_?fwd_kernel\b|loop_for_fwd"
    # a prompt or a question said to be long or complex, in English or Chinese ("if the prompt is more complex",
    # "prompt较为复杂", "比较长的问题"), or a request answered (请求 "request"): a run
    r"|\b(?:long|longer|complex|large|larger|bigger) (?:prompts?|questions?|inputs?|requests?|texts?)\b"
    r"|prompt\s*(?:is |was )?(?:more |too |very )?(?:long|complex)\b|prompt.{0,3}(?:较为|比较|较|太|很)?(?:长|复杂)"
    r"|长的(?:问题|输入|文本)|请求"
    # inference named as what was running ("Error during inference", 推理时 / 推理的时候 / 推理报… "while inferring")
    r"|\b(?:during|while|in) inferenc\w*|推理(?:时|的时候|过程|中|报)"
    # ... or a prediction on an input said to have failed ("Could not predict test_cdf7a.", ColabFold's batch loop;
    # "Prediction on device was unsuccessful"): the model was computing on that input (ColabFold#186, round 34)
    r"|\b(?:could not|couldn't|cannot|failed to|unable to) predict\b|\bprediction (?:on \w+ )?(?:failed|was unsuccessful)"
    # ... also with a word or two between ("at inference time", "OOM during QDQ inference") and the kind of input
    # inferred on ("long video inference", "image inference"): requests to a loaded model
    r"|\b(?:at|during|while|on) (?:[\w-]+ ){0,2}inferenc\w*|\b(?:video|image|vision|multimodal|long|batch) inferenc\w*"
    # a long text or too many tokens sent (长文本 "long text", "token 太多" "too many tokens"), a needle-in-a-haystack
    # test, an image uploaded or sent with the prompt (上传图片 "upload a picture"): requests to a loaded model
    r"|长(?:文本|输入|上下文)|tokens?\s*太多|太多\s*的?\s*tokens?|too many tokens|\bneed(?:le|el)[\s_-]?(?:test|in|haystack)"
    r"|上传(?:图片|图像)|\bupload\w* (?:an? |the )?(?:image|picture|photo)"
    r"|\b(?:send|sent|submit\w*) (?:an? |the )?(?:image|picture|photo)"
    # an input size written with a hyphen ("15k-tokens.txt"), lmdeploy's per-request line (input_tokens=2408) and
    # its TP worker loop (_tp_model_loop)
    r"|\b\d+(?:\.\d+)?k[-_]tokens?\b|\binput_tokens=\d|\bhistory_tokens=\d|model_loop\b"
    # memory that grows while serving ("显存一直缓慢增长直到oom", "memory keeps growing until"), 持续运行 "running on"
    r"|(?:显存|内存|memory|vram)[^\n.。]{0,12}?(?:一直|持续|逐渐|缓慢|keeps?|kept|steadily|slowly|continuously)"
    r"[^\n.。]{0,8}?(?:增长|增加|上升|grow|increas|ris)|持续运行"
    # -- the run said in prose (round 21's misses, session 10, diagnose17) --
    # an evaluation running ("CUDA out of memory when evaluating MMBench", "the evals run on 8 nodes", lm-eval's
    # "Running loglikelihood requests"): a loaded model answering a benchmark's items
    r"|\b(?:when|while|during) (?:the )?evaluat\w*|\bevals? (?:run|ran)\b|\brunning \w+ requests\b"
    # questions put one after another ("as more questions are presented"; 提交/发送第一个问题后 "after submitting the
    # first question"), the n-th item of a run reached ("at the 500th image"), a progress bar over questions or images
    r"|\bas more (?:questions|prompts|requests|turns|messages|inputs)\b"
    r"|(?:提交|发送|输入|问)了?\s*第?\s*[一二三四五六七八九十\d]+\s*个?\s*(?:问题|请求)\s*(?:后|之后|以后|时)"
    r"|\bat the \d+(?:st|nd|rd|th) (?:image|question|sample|prompt|request|item|example|video|batch)\b"
    r"|\bprocessing (?:questions|prompts|samples|requests|images|videos)\b"
    # a file or a text processed by the model (用baichuan处理一个10kb左右的文件 "processing a 10 kB file with baichuan")
    r"|处理[^，。,\n]{0,12}?(?:文件|文档|文本)"
    # a reply being streamed ("An error occurred during streaming"), an input fed to the model ("the number of frames I
    # feed into it"), a video or image inferred ("inference a 20s video"), inference tried ("When trying to inference")
    r"|\b(?:during|while|when) streaming\b|\bstreaming (?:response|reply|output|chat)"
    r"|\b(?:frames|images|tokens|inputs?|prompts?)\s+(?:i|we|you)\s+(?:feed|fed|pass|send|give)\b"
    r"|\binferenc?e?\w* (?:on |for |with )?(?:an? |the |my )?(?:\d+\s?s(?:ec\w*)? |long |short )?(?:videos?|images?)\b"
    r"|\b(?:try|trying|tried|attempt\w*) to inferenc\w*"
    # -- the run said by the allocator or the stack (round 25's misses, session 11, diagnose21) --
    # TensorFlow's "OOM when allocating tensor with shape[…]": OpKernelContext::allocate_tensor
    # (tensorflow/core/framework/op_kernel.cc) refusing an op kernel's output or scratch tensor within a step
    # (params_->step_id): a graph being computed, whatever the op; cuBLAS's CUBLAS_STATUS_ALLOC_FAILED (cublas_api.h,
    # status 3): the library allocates its workspace inside a GEMM call, when a model computes
    r"|oom when allocating tensor|cublas_status_alloc_failed"
    # ... and the same for the other compute libraries' own allocations: a GEMM as a frame of the failing stack
    # (CuArrays' "[10] gemm at …/blas/wrap.jl:903" allocating its output: Rayuela.jl#40, a Python frame "in gemm", a
    # call "gemm!("), cuFFT allocating a transform's work area ("CUFFTError(code 2, cuFFT failed to allocate GPU or CPU
    # memory)", CUFFT_ALLOC_FAILED: ThreeDeconv.jl#2). A library that only computes never places weights (round 37,
    # session 13, diagnose31). Not GEMM named otherwise: a runtime choosing its GEMM algorithms at start-up
    # ("gemm_config.in is not found; using default GEMM algo", lmdeploy), a build option ("--use_gemm_plugin"); nor
    # cuFFT named without its allocation failure: TensorFlow >= 2.14 prints "Unable to register cuFFT factory" at
    # nearly every import, the run or not (review13 finding 3)
    r"|\bgemm!?\s+at\b|\bin gemm!?\s*$|\bgemm!?\(|\bcufft_alloc_failed\b|\bcufft failed to allocate\b"
    r"|\bcuffterror\(code 2\b"
    # a traceback's frame inside the model's generate / inference call ('line 334, in generate',
    # 'self.s3gen.inference(', 'flow_inference('): the failure came from computing, not from loading weights; not
    # an engine being set up for inference (DeepSpeed's init_inference( loads and shards the weights)
    r"|\bin (?:generate|infer|inference|(?!init_)\w+_inference)\s*$|\.(?!init_)\w*inference\("
    # training a model: a fine-tune (the verb or the noun, "finetuning_lora.py"; not "fine-tuned", a finished
    # checkpoint that may be loading) and DeepSpeed's ZeRO stages (the Zero Redundancy Optimizer partitions optimizer
    # states, gradients and weights across a training job: "zero3", "ZeRO-2", "zero_stage 3")
    r"|\bfine[-_ ]?tun(?:e|es|ing)\b(?![-_ ]?d\b)|(?<![a-z])finetun(?:e|es|ing)(?![a-z]*ed\b)"
    r"|(?<![a-z])zero[-_]?(?:stage[-_ ]?)?[23](?!\d)"
    # -- what asked for the memory, in the allocator's own report (round 26's misses, session 11, diagnose22) --
    # ONNX Runtime's executor running a graph node ("Non-zero status code returned while running Mul node",
    # onnxruntime/core/framework/sequential_executor.cc): the arena was asked by a node being computed; a session that
    # fails while it is created says so instead ("Failed to create InferenceSession", initializers). TensorFlow's BFC
    # allocator's own refusal ("Allocator (DmlAllocator) ran out of memory trying to allocate 5.49MiB",
    # tensorflow/core/common_runtime/bfc_allocator.cc): the refusal op_kernel.cc then raises as "OOM when allocating
    # tensor", an op's tensor inside a step (above). A node's name may carry hyphens and dots (ONNX Runtime's OpenVINO
    # execution provider runs "OpenVINO-EP-subgraph_2" as one node: immich#13674, round 33)
    r"|while running [\w.-]+ node\b|ran out of memory trying to allocate"
    # -- a served request: the emitter is a server's batch handler (infinity_emb's "batch_handler.py:574" on the
    # out-of-memory line): a batch of requests was being computed by a model that had loaded
    r"|\bbatch_handler\b|\b(?:handle|process|run)_batch\b"
    # -- what asked, in the allocator's report (round 27's misses, session 11, diagnose23) --
    # a kernel's output or workspace being allocated for a graph node ("Malloc for kernel output failed, … node:
    # Default/Cast-op446": MindSpore allocating an op's output as it launches it), like TensorFlow's op kernel above: a
    # graph being computed
    r"|\bkernel (?:output|workspace)\b|\bnode:\s*\S*-op\d+"
    # a batch of inputs put through a chain or a model in a traceback's frame (LangChain's ``chain.batch(``, Keras'
    # ``model.predict(``): inputs being computed by a model that had loaded. Not ``.invoke(``: a client's first call
    # may be what makes a server load the model. Not a batch size said in prose either: "even when I am using batch
    # size of 1" (PIXOR#31, the run) and "even if I change the batch size to 2" (llama#455, the load) say the same
    r"|\.a?(?:batch|predict)\("
    # -- what asked, in the allocator's report (round 28's misses, session 11, diagnose24) --
    # XLA executing a compiled program: its buffer assignment dumped when the executable's buffers do not fit
    # ("BufferAssignment OOM Debugging. … preallocated temp allocation", xla/service/gpu/gpu_executable.cc), or a
    # replica's execution said to fail (JAX's older "Execution of replica 0 failed: Resource exhausted", local_client.cc):
    # a computation running, not arrays being placed
    r"|bufferassignment oom debugging|preallocated temp allocation|execution of replica \d+ failed"
    # ... or XLA's check that a compiled program fits a memory space ("Ran out of memory in memory space hbm. Used
    # 8.38G of 8.00G hbm", its "Total hbm usage" split into program and arguments): the program's temporaries are an
    # executing step's, the model's weights being its arguments (tensorflow/tpu#385, flowpm#27, ColabFold#62, round 35)
    r"|ran out of memory in memory space \w+|total \w+ usage >="
    # an inference call said to fail (a hosted API's "There was an inference error: CUDA out of memory"), and a program
    # said to have run for a while before the failure ("after sometime of running", whisperX#315): the load was over
    r"|\binference error\b|\bafter (?:some ?time|a while|a few (?:minutes|hours)|\d+ (?:minutes|hours|mins?|h))"
    r"(?: of)? running\b|\brunning for (?:a while|some ?time|(?:a few|\d+) (?:minutes|hours))\b"
    # -- the run said by the user (round 29's misses, session 11, diagnose25) --
    # a web UI's run button pressed ('I click "Generate"', sygil-webui#1493): a job started on a model the UI had
    # loaded at start-up; a button that loads ("Load model") is not one of these
    r"|\bclick(?:s|ed|ing)?\s+(?:on\s+)?(?:the\s+)?[\"“'\[(]?(?:generate|submit|run|send|interrogate|upscale)\b"
    # an image, picture or video the user tried to make, whatever the verb or its spelling ("try and genatre an image",
    # stable-diffusion-webui#3527): the output of a run; not a verb that loads or fetches, nor an image *model*
    r"|\b(?:try|trying|tried|attempt\w*)\s+(?:and|to)\s+(?!(?:re|up|down|off)?load)[a-z]+\s+(?:an?|the|some|one|my)\s+"
    r"(?:new\s+)?(?:image|picture|photo|video)s?\b(?!\s+(?:model|checkpoint))"
    # a request said to be received (llama.cpp#13085's "When the first request is received"), like "received request"
    r"|\brequests? (?:is |was |were |are )?received\b"
    # -- what asked (round 30's misses, session 11, diagnose26) --
    # a cuDNN call that failed (cudnn_status_*, "cuDNN error: …"): cuDNN is called only to compute a layer (a
    # convolution or an RNN, forward or backward), never to place weights, so memory asked for around it was a step's
    # (mmaction2#493); a ComfyUI workflow, a graph or a prompt said to be executing ("errors during execution",
    # ComfyUI#6856): the graph runs on models a loader node had placed. Not "during the execution of TVM" (TVM's
    # banner over any of its errors, a load's too: mlc-llm#38): "of" names a library, not a graph
    r"|\bcudnn_status_\w+|\bcudnn error\b"
    r"|\b(?:during|while|in) (?:the )?(?:workflow |graph |prompt )?execution\b(?! of)"
    r"|\bexecut(?:e|es|ed|ing) (?:the |a |my |this )?(?:workflow|prompt|graph)\b"
    # -- what asked (round 31's misses, session 11, diagnose27) --
    # XLA executing a compiled program in a traceback's frame (JAX's ``out_bufs = compiled.execute(input_bufs)``,
    # jax/_src/interpreters/pxla.py; ``execute_sharded``): a computation running on arrays already placed (ColabFold#65);
    # a pipeline's or a model's call on one input in a frame (``pipeline.process(media_info)``, whisper's
    # ``model.transcribe(audio)``): the input being computed by what had loaded (WhisperJAV#118). Not ``.process(`` of
    # anything else (a config, a checkpoint)
    r"|\bcompiled\.execute\(|\bexecute_sharded\w*\("
    r"|\.(?:process|transcribe)\(\s*\w*(?:media|audio|video|image|input|frame|batch|sample|clip)"
    # -- numbers that only exist once running: memory said to have grown to a figure ("it quickly grows to 46GB",
    # "climbs to ~11.9 GB over 3 requests"): usage rose after start-up, while it worked
    r"|\b(?:grows?|grew|growing|rises|rose|climb(?:s|ed)?|goes up|went up)\s+(?:up\s+)?to\s+~?\d+(?:\.\d+)?\s?[kmgt]i?b\b"
    # ... or an input that grew until the failure (GROWN, below)
    # llama.cpp's server's own completion endpoint (examples/server: POST /completion; Ollama's runner serves it too),
    # beside the OpenAI-style /completions above: a request
    # -- what asked, in a traceback's frames and a run's own log (rounds 56-59's misses, session 19, diagnose19) --
    # DeepSpeed ZeRO-3 gathering a submodule's partitioned weights for its forward or backward pass: the
    # coordinator's fetch_sub_module is called only from the module hooks pre_sub_module_forward_function /
    # pre_sub_module_backward_function (deepspeed/runtime/zero/parameter_offload.py; partitioned_param_coordinator.py),
    # which fire when a module runs. A load under ZeRO-3 partitions weights as they are made (zero.Init,
    # partition_parameters.py) and never goes through the coordinator (TDPO's sbatch log, round 58)
    r"|partitioned_param_coordinator|\bfetch_sub_module\b|\bpre_sub_module_(?:forward|backward)"
    # an input's length printed as a key and its value by the program that runs it ("rung: tokens=1 seqlen=128", a
    # training ladder's step, round 58; "batch_size = 4,seq_len=100"): the size of what is being computed. Not a
    # maximum a server or a build is configured with ("max_seq_len=4096", "max_seq_length: 2048"): the key must begin
    # the word, so max_ before it is not read
    r"|(?<![\w-])seq_?len(?:gth)?\s*=\s*\d"
    # -- what asked, in a traceback's frames and a trainer's own log (rounds 64-65's misses, session 20, diagnose20b) --
    # a frame inside the source of a training or decoding loop, which runs only on a model already placed: torch.optim's
    # optimizers (torch/optim/<name>.py: Optimizer.step and its _single_tensor_ / _multi_tensor_ kernels, reached by
    # optimizer.step() after a backward), Lightning's loops (lightning/pytorch/loops/: fit_loop, training_epoch_loop,
    # evaluation_loop; the strategy placed the model before, in Trainer._run) and a trainer's step by its name in any
    # trainer subclass (transformers' trainer.py: _inner_training_loop, compute_loss, prediction_step; a frame in
    # trainer.py itself was read already by "trainer", and transformers' decoding loops by "generation": generation/
    # utils.py, _sample, greedy_search …). And a loss value printed ("'loss': 2.31", "loss=2.31", "loss train: 2.31",
    # "loss 2.3101"): a step had completed
    r"|\btorch[/\\]optim[/\\](?!__init__)\w+\.py|\boptimizer\.step\(|\b_(?:single|multi)_tensor_(?:adam|sgd)\w*"
    r"|(?:lightning|pytorch_lightning)[/\\](?:pytorch[/\\])?loops[/\\]"
    r"|\b_inner_training_loop\b|\bcompute_loss\b|\bprediction_step\b"
    r"|\bloss(?:\W{1,2}train)?['\"]?\s*(?:[:=]\s*\d|\d+\.\d)"
    r"|/completion\b|" + GROWN_WORDS + "|" + RAN_FOR_WORDS + "|" + SERVING_WORDS)
# the load said to be over ("The engine can be built but went OOM", 加载完 "finished loading", "loaded successfully"):
# a failure after it, with run words around it, is the run even where the log also shows the load or the build
LOADED = re.compile(r"(?:can|could) be built,? but|\bbuilt successfully|loaded successfully|加载(?:完|成功)"
                    # the server said to start fine ("能正常启动" "starts normally", "started successfully")
                    r"|(?:能|可以)?正常启动|启动成功|\bstart(?:s|ed)? (?:up )?(?:fine|normally|successfully|ok)\b"
                    # ... or the model said to load fine ("The models load fine", llama.cpp#13085)
                    r"|\bloads? (?:fine|ok|normally|successfully)\b|\bloaded (?:fine|ok|normally)\b"
                    # ... or said to have been able to load it ("I was able to load the model fine …, but when I run
                    # generate …"): the load worked (review22b #1)
                    r"|\b(?:was|were|am|is|are|'m|'re) able to load\b"
                    # the program's own end-of-start-up line ("Initialization Finished", "Loading LLAMA Done")
                    r"|initiali[sz]ation (?:is )?(?:finished|done|complete)|\bloading [\w.-]+ done\b|\bdone loading\b"
                    # transformers' shard progress bar at its end ("Loading checkpoint shards: 100%|█████| 33/33")
                    r"|checkpoint shards:\s*100%"
                    # llama-perplexity's pass over its chunks, printed once the model and context are made (RUN)
                    r"|\bcalculating perplexity over\b|" + GROWN_WORDS + "|" + RAN_FOR_WORDS + "|" + SERVING_WORDS)


# a progress bar (tqdm's "Steps: 0% 0/1000 [00:02<?, ?it/s]", "Processing Questions:  32%|██▋ | 557/1748 [3:55:14<…"):
# a counter of items done. What it counts is its label: a counter of steps, questions, requests … is the run under
# way; one of files, shards, weights or a download is the load (start-up), as its label's load words say
PROGRESS_BAR = re.compile(r"^\W{0,4}(?P<label>[^|\n]{0,60}?)\s*:?\s*\d{1,3}%\s*(?:completed\s*)?\|?[^\n]{0,80}?\b\d+/\d+\s*\[")
_LOAD_COUNTED = re.compile(r"\b(?:files?|shards?|weights?|tensors?|layers?|download\w*|fetch\w*)\b|\.safetensors|\.bin\b")


def progress_phase(low: str) -> str | None:
    """"run" or "load" for a progress bar's line by what its label counts; None when the line is no progress bar."""
    if "%" not in low or "/" not in low or not (m := PROGRESS_BAR.search(low)):
        return None
    label = m.group("label")
    return "load" if LOAD.search(label) or _LOAD_COUNTED.search(label) else "run"


# a line of an environment listing, a package and its version and nothing else ("vllm-flash-attn 2.6.1", "torch==2.1.0",
# pip list / pip freeze / a report's versions, VITA#33): it names what is installed, not what the program was doing,
# so its words ("attn", "generation") are no phase
PACKAGE_LINE = re.compile(r"^\W{0,4}[a-z][\w.-]*(?:\s+|\s*[=:]=?\s*|\s*[:：]\s*v?)v?\d+(?:\.\w+)+[\w.+-]*\W{0,2}$")


# where a sentence's clauses part (commas, semicolons, full stops, in English and Chinese), and the words that say
# memory ran out, to find the clause a line's out-of-memory is said in
_CLAUSE_END = re.compile(r"[，;；。!！？]|[,.?](?:\s|$)")  # not a comma inside a figure ("shape[50000,4096]")
_OOM_SAID = re.compile(r"out of memory|outofmemory|(?<![a-z])oom(?![a-z])|显存不足|内存不足|爆显存|显存溢出|内存溢出")


def oom_clause(low: str) -> str | None:
    """The first clause of a line that says memory ran out, or None when none says it."""
    start = 0
    for end in [m.start() for m in _CLAUSE_END.finditer(low)] + [len(low)]:
        clause = low[start:end]
        start = end + 1
        if _OOM_SAID.search(clause):
            return clause
    return None


def _phase_of_oom_clause(low: str) -> str | None:
    """On a line with both load and run words: the phase of the clause that says memory ran out, when only one
    phase is said there ("我在使用deepspeed zero3加载13B模型，在推理时依然会报…OutOfMemoryError": loaded in the first
    clause, out of memory "at inference time" in the second). None when no clause says it, or it says both."""
    clause = oom_clause(low)
    if clause is None:
        return None
    load, run = bool(LOAD.search(clause)), bool(RUN.search(clause))
    return None if load == run else ("load" if load else "run")


# KoboldAI's API answer to an out-of-memory ("KoboldAI ran out of memory: …", HTTP 507, relayed by TavernAI and other
# clients: tavernai-v1#15, round 46; koboldai#381, round 47). aiserver.py raises it from api_catch_out_of_memory_errors,
# which api_schema_wrap puts around every API endpoint: the generate endpoints and PUT /model ("Load a model") alike.
# So it says a request ran only in the lines around it (classify reads it as RUN there), where a load said beside it
# still wins; on its own line it names no phase (phase_of_line does not read it)
REQUEST_WRAPPER = re.compile(r"\bkoboldai ran out of memory\b")


def phase_of_line(low: str) -> str | None:
    """"load", "run" or None for one lower-cased line; a load marker wins on a line that has both
    (vLLM's "warming up sampler" is start-up), unless the line says the load was over ("after it finished loading,
    an image was uploaded") or the clause that says memory ran out names only the run."""
    if LOADED.search(low) and RUN.search(low):
        return "run"
    if LOAD.search(low):
        return _phase_of_oom_clause(low) or "load" if RUN.search(low) else "load"
    if RUN.search(low):
        return "run"
    return None

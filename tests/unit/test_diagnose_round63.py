"""Round 63's misses (session 20, diagnose20), tuned on once the round had been scored (once, by diagnose19b:
scoring/round63_first_run.txt, 36/38) and moved to tuning. Both were stops from outside answered ``unknown``: a
generation job ended by ``timeout -s TERM`` whose wrapper printed "gen.py exited with code 124", and a Ctrl-C during
generation whose traceback ends in a bare ``KeyboardInterrupt``.

The signal is the process's own signal or exit status, not one text's wording (signal(7): SIGINT = 2, SIGTERM = 15,
SIGKILL = 9; a shell or docker reports a death by signal N as 128 + N):

- Python's default SIGINT handler raises KeyboardInterrupt, which closes the traceback as a line of its own;
- exit status 124 is GNU timeout's own when the command timed out (coreutils timeout(1): "If the command times out,
  and --preserve-status is not set, then exit with status 124"); 130 is 128 + SIGINT; 143 is 128 + SIGTERM (docker stop
  sends SIGTERM: docker-library/tomcat#146 pastes "Exited (143) 7 seconds ago" after `docker stop tomcat`);
- bash's job report names the signal by strsignal(): "Terminated" for SIGTERM, as "Killed" for SIGKILL;
- Python's CalledProcessError names the child's signal: "died with <Signals.SIGTERM: 15>" (subprocess.py's __str__).

The kernel's OOM killer sends SIGKILL: exit 137, the shell's "Killed", "died with <Signals.SIGKILL: 9>", and its own
line in dmesg. So each contrast keeps the paste and changes only the signal or the status to SIGKILL's, and the answer
must stay a memory failure; a user-space OOM killer that sends SIGTERM (earlyoom) names itself on its own line, which
outranks the stop.

Pastes: round 63's texts (measurements/public_errors/round63.jsonl, produced here by round63_make/'s scripts, cited
beside each; the expected answer is the label each script fixed before it ran) and public threads (URL beside).
"""

from __future__ import annotations

import pytest

from runlocal.diagnose import diagnose_text


def _answer(text: str) -> tuple[str, str | None]:
    d = diagnose_text(text)
    return d.category, d.entry.id if d.entry else None


STOPPED = ("not_memory", "notmem-stopped")
SIGKILL = ("oom_killer", "process-killed")

# round63_make/l11.py (round 63): a shell script runs gen.py under `timeout -s TERM`; its last lines, as pasted
_TIMEOUT_WRAPPER = (
    "batch job started\n\n"
    "Loading weights: 100%|██████████| 21/21 [00:00<00:00, 25478.85it/s]\n"
    "sample 0: w31724 w16391 w22301 w6027\n"
    "sample 6: w24301 w13691 w930 w31903\n"
    "gen.py exited with code {code}\n")

_SITE = '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/'
# round63_make/l12.py (round 63): Ctrl-C during model.generate; the traceback's tail, as pasted
_GENERATE_TAIL = (
    "Traceback (most recent call last):\n"
    + _SITE + 'transformers/models/llama/modeling_llama.py", line 252, in forward\n'
    "    key_states, value_states = cache.update(key_states, value_states, self.layer_idx, kwargs=kwargs)\n"
    "                               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    + _SITE + 'transformers/cache_utils.py", line 137, in update\n'
    "    self.values = torch.cat([self.values, value_states], dim=-2)\n"
    "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n")


@pytest.mark.parametrize("code", [124, 130, 143])
def test_a_wrapper_reporting_a_stop_status_is_not_memory(code: int) -> None:
    assert _answer(_TIMEOUT_WRAPPER.format(code=code)) == STOPPED


def test_the_same_wrapper_reporting_sigkills_status_stays_the_kill() -> None:
    # 137 = 128 + SIGKILL: what the OOM killer leaves (round63_make/m10.py's "finished with status 137")
    assert _answer(_TIMEOUT_WRAPPER.format(code=137)) == SIGKILL


@pytest.mark.parametrize("code", [1, 2, 125])
def test_other_exit_statuses_are_not_read_as_a_stop(code: int) -> None:
    # 1 and 2: the program's own failure; 125: timeout itself failed (coreutils) — none says who ended the process
    assert _answer(_TIMEOUT_WRAPPER.format(code=code)) != STOPPED


def test_a_traceback_closed_by_keyboardinterrupt_is_a_stop() -> None:
    assert _answer(_GENERATE_TAIL + "KeyboardInterrupt\n") == STOPPED


def test_keyboardinterrupt_in_a_public_paste() -> None:
    # https://github.com/kwonathan/language-models-trajectory-generators/issues/2 (the maintainer's Ctrl-C of a
    # hung run, pasted to show where it hung)
    text = ('^C[INFO/EnvProcess] process shutting down\nProcess EnvProcess:\nTraceback (most recent call last):\n'
            '  File "/Users/x/env.py", line 34, in update\n    time.sleep(config.control_dt)\nKeyboardInterrupt\n')
    assert _answer(text) == STOPPED


def test_the_same_traceback_closed_by_an_allocator_refusal_is_memory() -> None:
    # round63_make/m03.py's last line (a CPU allocation refused under RLIMIT_AS) under the same frames
    text = _GENERATE_TAIL + ("RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
                             "allocate memory: you tried to allocate 33554432 bytes. Error code 12 (Cannot allocate "
                             "memory)\n")
    assert _answer(text)[0] == "oom_killer"


def test_keyboardinterrupt_named_inside_a_line_is_no_stop() -> None:
    # the exception's name in code or prose ("except KeyboardInterrupt:") says nothing of how this run ended
    assert _answer("    except KeyboardInterrupt:\n        pass\n") != STOPPED


@pytest.mark.parametrize("signal_word, expected", [("Terminated", STOPPED), ("Killed", SIGKILL)])
def test_bashs_job_report_names_the_signal(signal_word: str, expected: tuple[str, str]) -> None:
    # bash: "<script>: line N: <pid> <strsignal(sig)>  <command>" (round63_make/m10.py's "line 3: 27568 Killed")
    text = f"step 15 loss 0.0202\nfinetune.sh: line 3: 27568 {signal_word}                  python3 train_loop.py\n"
    assert _answer(text) == expected


@pytest.mark.parametrize("status, expected", [(143, STOPPED), (137, SIGKILL)])
def test_dockers_exited_status(status: int, expected: tuple[str, str]) -> None:
    # https://github.com/docker-library/tomcat/issues/146: `docker ps -a` after `docker stop tomcat`
    text = ('91c01eccfdda        tomcat               "catalina.sh run"        About a minute ago   '
            f"Exited ({status}) 7 seconds ago                       tomcat\n")
    assert _answer(text) == expected


@pytest.mark.parametrize("tail, expected", [
    ("130 (interrupted by signal 2: SIGINT)", STOPPED),
    ("143 (interrupted by signal 15: SIGTERM)", STOPPED),
    ("137 (interrupted by signal 9: SIGKILL)", SIGKILL),
])
def test_an_ides_exit_report(tail: str, expected: tuple[str, str]) -> None:
    # PyCharm's run console: "Process finished with exit code N (interrupted by signal S: NAME)"
    assert _answer(f"Process finished with exit code {tail}\n") == expected


def test_an_oom_killer_that_sends_sigterm_outranks_the_stop() -> None:
    # earlyoom sends SIGTERM first (https://github.com/Comfy-Org/ComfyUI/issues/15276, round 5's comfyui-15276, pastes
    # its two lines); the shell then reports "Terminated", but earlyoom's own line says why
    text = ("Aug 04 10:39:10 debian earlyoom[845]: low memory! at or below SIGTERM limits: mem  3.00%, swap 10.00%\n"
            'Aug 04 10:39:10 debian earlyoom[845]: sending SIGTERM to process 322603 uid 1000 "python3.13": '
            "badness 1064, VmRSS 27361 MiB\n"
            "./run.sh: line 2: 322603 Terminated              python3.13 main.py\n")
    assert _answer(text) == ("oom_killer", "linux-oom-killer")


def test_the_kernels_oom_line_outranks_a_later_stop_status() -> None:
    # the kernel's report (mm/oom_kill.c) in the same paste as a wrapper's 143: the kernel's line says memory
    text = ("[12345.678901] Out of memory: Killed process 27568 (python3) total-vm:30123456kB, anon-rss:29000000kB\n"
            + _TIMEOUT_WRAPPER.format(code=143))
    assert _answer(text)[0] == "oom_killer"


@pytest.mark.parametrize("signal_name, expected", [("SIGTERM: 15", STOPPED), ("SIGINT: 2", STOPPED),
                                                   ("SIGKILL: 9", SIGKILL)])
def test_a_subprocess_that_died_of_a_signal(signal_name: str, expected: tuple[str, str]) -> None:
    # round63_make/m11.py (round 63): a parent runs worker.py with check=True; the traceback's last line, as pasted
    text = (_SITE.replace("site-packages/", "") + 'subprocess.py", line 502, in check_returncode\n'
            "    raise CalledProcessError(self.returncode, self.args, self.stdout,\n"
            "subprocess.CalledProcessError: Command '['/root/.pyenv/versions/3.11.7/bin/python3', 'worker.py']' "
            f"died with <Signals.{signal_name}>.\n")
    assert _answer(text) == expected


def test_vllms_sigterm_handler_raises_keyboardinterrupt_terminated() -> None:
    # vLLM's api_server installs signal_handler -> raise KeyboardInterrupt("terminated") for SIGTERM while it starts;
    # pasted after a Kubernetes liveness probe killed a slow start (https://github.com/imroc/tke-guide/blob/
    # 020deb1acc1bad4fdc56b9f7aa6afc7c465acdcc/content/ai/llm.md)
    text = ("Traceback (most recent call last):\n"
            '  File "uvloop/loop.pyx", line 379, in uvloop.loop.Loop._ceval_process_signals\n'
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 871, '
            "in signal_handler\n"
            '    raise KeyboardInterrupt("terminated")\n'
            "KeyboardInterrupt: terminated\n")
    assert _answer(text) == STOPPED


_AGENT = "W0409 07:28:49.530000 1359 torch/distributed/elastic/"


@pytest.mark.parametrize("signum", [1, 2, 15])
def test_torchruns_agent_that_received_a_signal_is_a_stop(signum: int) -> None:
    # torchrun's agent logs the signal it received, then raises SignalException (torch/distributed/elastic/
    # agent/server/api.py; multiprocessing/api.py _terminate_process_handler): https://github.com/pytorch/pytorch/
    # issues/150916 (15), https://github.com/MCG-NJU/RTD-Action/issues/31 (2), https://github.com/zai-org/ChatGLM2-6B/
    # issues/238 (1, SIGHUP: the session closed)
    text = (_AGENT + f"agent/server/api.py:719] Received {signum} death signal, shutting down workers\n"
            + _AGENT + "multiprocessing/api.py:897] Sending process 1365 closing signal SIGTERM\n"
            f"torch.distributed.elastic.multiprocessing.api.SignalException: Process 1359 got signal: {signum}\n")
    assert _answer(text) == STOPPED


def test_torchruns_agent_closing_its_workers_after_one_was_killed_stays_the_kill() -> None:
    # the agent sends SIGTERM to the other workers after one died of SIGKILL (exitcode -9: the OOM killer); it
    # received no signal itself, so its "closing signal SIGTERM" is no stop
    text = (_AGENT + "multiprocessing/api.py:897] Sending process 1365 closing signal SIGTERM\n"
            "E0409 07:28:50.000000 1359 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) "
            "local_rank: 0 (pid: 1364) of binary: /usr/bin/python3\n")
    assert _answer(text) == SIGKILL


@pytest.mark.parametrize("tail", ["***", "DUE TO TIME LIMIT ***", "DUE TO JOB REQUEUE ***"])
def test_slurms_cancellation_is_a_stop(tail: str) -> None:
    # slurmstepd's line after scancel (https://github.com/qiskit-community/spank-plugins/pull/17), a time limit, a
    # requeue (https://github.com/facebookincubator/submitit/issues/1708)
    assert _answer(f"slurmstepd: error: *** JOB 3 ON c1 CANCELLED AT 2025-02-13T15:47:35 {tail}\n") == STOPPED


def test_slurms_cgroup_oom_kill_stays_memory() -> None:
    # slurmstepd's report when the job's memory cgroup killed a task: the memory limit, whatever else Slurm prints
    text = ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1234.batch. Some of your processes may have "
            "been killed by the cgroup out-of-memory handler.\n"
            "srun: error: node01: task 0: Out Of Memory\n")
    assert _answer(text)[0] == "oom_killer"


@pytest.mark.parametrize("word, expected", [("Terminated", STOPPED), ("Killed", SIGKILL)])
def test_sruns_task_report(word: str, expected: tuple[str, str]) -> None:
    # srun names a task's signal by strsignal(), as bash does
    assert _answer(f"srun: error: node01: task 0: {word}\n") == expected


# review20b finding 1: the stop rule's bare "Terminated" alternative caught SIGKILL's own reports. signal(7): SIGKILL
# is 9 and a shell reports a death by it as 128 + 9 = 137 (the kernel's OOM killer sends it), so a "terminated" line
# naming SIGKILL, signal 9 or 137 is the kill, and a bare "Terminated" beside "Exit Code: 137" (kubectl describe's
# field for the container's status) yields to the kill. Before round 63's rule (86643473) the first two were
# oom_killer and the third unknown; they are again.
@pytest.mark.parametrize("text", [
    "Terminated\nExit Code: 137\n",
    "terminated by signal SIGKILL\n",
    "[1]+  Terminated   python serve.py\nKilled\n",
])
def test_a_terminated_line_beside_or_naming_sigkill_is_the_kill(text: str) -> None:
    assert _answer(text) == SIGKILL


def test_terminated_by_signal_9_with_no_other_signature_is_no_stop() -> None:
    assert _answer("vllm serve exited\nterminated by signal 9\n")[1] != STOPPED[1]


# contrast: SIGTERM's reports stay the stop (strsignal(SIGTERM) is "Terminated"; 143 = 128 + 15; 124 is timeout's)
@pytest.mark.parametrize("text", [
    "Terminated\n",
    "[1]+  Terminated   python serve.py\n",
    "terminated by signal SIGTERM\n",
    "gen.py exited with code 143\n",
    "gen.py exited with code 124\n",
])
def test_sigterm_reports_stay_the_stop(text: str) -> None:
    assert _answer(text) == STOPPED

"""The study folder's lock: the kernel's, so a killed study leaves none; its file names the holder, gone when it ends."""

import fcntl
import os
import platform
import signal
import subprocess
import sys
import time

import pytest

from sb3_ablation.study.store.lock import LOCK_NAME, StudyLockedError, _same_file, study_lock


def test_a_second_study_is_refused_and_a_killed_one_leaves_a_file_but_no_lock(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from sb3_ablation.study.store.lock import study_lock\nwith study_lock({str(tmp_path)!r}):\n"
         "    print('locked', flush=True)\n    import time; time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(StudyLockedError, match=f"pid {holder.pid} .*is writing into"), study_lock(tmp_path):
        pass
    holder.send_signal(signal.SIGKILL)  # no clean-up runs
    holder.wait()
    assert (tmp_path / LOCK_NAME).read_text() == f"pid {holder.pid} on {platform.node()}"  # left behind
    with study_lock(tmp_path):  # taken over at once
        assert (tmp_path / LOCK_NAME).read_text() == f"pid {os.getpid()} on {platform.node()}"


def _held_with_text(folder, text):
    """The folder locked by another open file of this process, with ``text`` in the lock file."""
    file = open(folder / LOCK_NAME, "w")  # noqa: SIM115 (closed by the test)
    file.write(text)
    file.flush()
    fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    return file


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pid 4242 on elsewhere-node", r"another study \(pid 4242 on elsewhere-node, another machine\) is writing into"),
        ("", r"^another study is writing into"),
    ],
)
def test_the_message_says_what_this_machine_can_tell_of_the_holder(tmp_path, text, expected):
    file = _held_with_text(tmp_path, text)
    with pytest.raises(StudyLockedError, match=expected), study_lock(tmp_path):
        pass
    file.close()


def test_a_holder_that_has_not_yet_named_itself_is_not_blamed_on_the_last_one(tmp_path):
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    file = _held_with_text(tmp_path, f"pid {finished.pid} on {platform.node()}")
    message = f"the lock file still names pid {finished.pid}, which has ended"
    with pytest.raises(StudyLockedError, match=message), study_lock(tmp_path):
        pass
    file.close()


def test_a_study_that_ends_removes_its_lock_file(tmp_path):
    with study_lock(tmp_path):
        assert (tmp_path / LOCK_NAME).is_file()
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_lock_file_removed_and_made_again_meanwhile_is_not_taken(tmp_path):
    # the opening this study did names a file that another study's ending removed: its lock would lock nothing
    path = tmp_path / LOCK_NAME
    with open(path, "a+") as opened:
        path.unlink()
        path.write_text("")
        assert not _same_file(opened, path)
    with open(path, "a+") as opened:
        assert _same_file(opened, path)


def test_sigterm_ends_a_study_with_one_line_and_leaves_no_lock_file(tmp_path):
    out = tmp_path / "study"
    argv = [
        sys.executable, "-m", "sb3_ablation", "study", "--env", "Pendulum-v1", "--variants", "td3", "--seeds", "2",
        "-n", "20000", "--hyperparams", "learning_starts:100", "--verbose", "0", "--workers", "2", "--out", str(out),
    ]  # fmt: skip
    study = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(3000):  # until its runs are under way (the lock is taken)
        if (out / LOCK_NAME).exists() or study.poll() is not None:
            break
        time.sleep(0.1)
    time.sleep(2)
    study.send_signal(signal.SIGTERM)
    _, stderr = study.communicate(timeout=120)
    assert study.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1] == (
        f"terminated (SIGTERM): finished runs are kept in {out}; rerun the same command to do the rest"
    )
    assert "leaked" not in stderr and "Traceback" not in stderr, stderr
    assert not (out / LOCK_NAME).exists()

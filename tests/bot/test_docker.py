"""The Docker image: lint the Dockerfile, check the GPU stage's CUDA pairing, then build the CPU
image for real with podman and run it (health, a UCI move, the HEALTHCHECK, user, contents).

The base image is a STAND-IN. Docker Hub cannot be reached from CI or our machines, so the image
the Dockerfile's `FROM` names (the default of `ARG PYTHON_IMAGE`) is made locally: a minimal
Debian (debootstrap, the suite the name ends with) with python3 and python3-venv, cleaned the
way Debian's official images clean apt, imported under exactly that name and labelled as a
stand-in. A real image of that name already present is used as it is. The stand-in stays in
podman's storage, so later runs only rebuild the layers whose inputs changed.

The podman tests skip, saying why, where podman or debootstrap is missing (tests/run.sh installs
them with apt when it can) or cannot run containers here (not root, no user namespaces, ...).
A build that fails for the image's own reasons fails the test.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.engine
import pytest

from tests.conftest import REPO

DOCKERFILE = REPO / "Dockerfile"
IMAGE = "localhost/oneply-test:cpu"
# Containers of the image run without a network: the engine needs none, and no bridge
# networking (iptables, netavark) is needed on the test machine.
OFFLINE = "--network=none"
STAND_IN_LABEL = "org.oneply.stand-in"
# Debian's official images delete downloaded .debs after each apt run; the stand-in does too,
# so the image sizes we measure are the ones a real build gets.
_APT_RM = "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb"
APT_DOCKER_CLEAN = (
    f'DPkg::Post-Invoke {{ "{_APT_RM} /var/cache/apt/*.bin || true"; }};\n'
    f'APT::Update::Post-Invoke {{ "{_APT_RM} /var/cache/apt/*.bin || true"; }};\n'
    'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
)
STAND_IN_PACKAGES = "python3,python3-venv,ca-certificates"

# onnxruntime-gpu release → the CUDA major its PyPI wheels are built for, as (first release,
# CUDA major), from onnxruntime's release notes and its CUDA execution provider requirements
# (1.19 moved the default PyPI package from CUDA 11.8 to CUDA 12; 1.27 to CUDA 13). Checked
# against the wheels' own NEEDED entries (libcudart.so.12 in 1.24.4 and 1.26.0,
# libcudart.so.13 in 1.27.0).
ORT_GPU_CUDA_MAJOR = [((1, 0), 11), ((1, 19), 12), ((1, 27), 13)]


def logical_lines() -> list[str]:
    """The Dockerfile's logical lines (continuations joined), comments and blanks dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def stage(name: str) -> list[str]:
    """The logical lines of one build stage, from its FROM to the next."""
    lines = logical_lines()
    start = next(i for i, line in enumerate(lines) if line.endswith(f"AS {name}"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("FROM "))
    return lines[start:end]


def instruction(lines: list[str], keyword: str) -> list[str]:
    return [line[len(keyword) + 1 :] for line in lines if line.startswith(keyword + " ")]


def arg_defaults() -> dict[str, str]:
    """The global build arguments' defaults (the ARGs before the first FROM)."""
    lines = logical_lines()
    first_from = next(i for i, line in enumerate(lines) if line.startswith("FROM "))
    args = instruction(lines[:first_from], "ARG")
    return dict(arg.split("=", 1) for arg in args if "=" in arg)


def cuda_major_for_onnxruntime_gpu(version: str) -> int:
    release = tuple(int(part) for part in version.split(".")[:2])
    return [major for first, major in ORT_GPU_CUDA_MAJOR if release >= first][-1]


def test_dockerfile_lints_clean():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.fail("hadolint is a test dependency: pip install -e '.[test]'")
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_runs_as_non_root_with_bot_default_and_healthcheck():
    lines = stage("cpu")
    assert instruction(lines, "USER") == ["10001"]
    assert json.loads(instruction(lines, "ENTRYPOINT")[0]) == ["oneply"]
    assert json.loads(instruction(lines, "CMD")[0])[0] == "bot"
    assert "oneply" in instruction(lines, "HEALTHCHECK")[0]


def test_gpu_stage_pins_onnxruntime_gpu_built_for_the_base_images_cuda():
    """A CUDA 13 onnxruntime-gpu on a CUDA 12 base (or the reverse) loads, finds no CUDA
    libraries it can use and silently runs on the CPU; only the pairing can be checked here."""
    args = arg_defaults()
    base = re.fullmatch(r"nvidia/cuda:(\d+)\.\d+(?:\.\d+)?-(\S+)", args["CUDA_IMAGE"])
    assert base, f"CUDA_IMAGE is not an nvidia/cuda:X.Y.Z-... tag: {args['CUDA_IMAGE']}"
    assert "cudnn" in base.group(2), "onnxruntime-gpu needs cuDNN: use a -cudnn- base tag"
    version = args.get("ONNXRUNTIME_GPU", "")
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"pin ONNXRUNTIME_GPU to X.Y.Z: {version!r}"
    assert cuda_major_for_onnxruntime_gpu(version) == int(base.group(1)), (
        f"onnxruntime-gpu {version} is built for CUDA "
        f"{cuda_major_for_onnxruntime_gpu(version)}, the base image has CUDA {base.group(1)}"
    )
    installs = [run for run in instruction(stage("gpu"), "RUN") if "onnxruntime-gpu" in run]
    assert installs and all("onnxruntime-gpu==${ONNXRUNTIME_GPU}" in run for run in installs)


def test_onnxruntime_gpu_table_maps_known_releases():
    assert cuda_major_for_onnxruntime_gpu("1.18.1") == 11
    assert cuda_major_for_onnxruntime_gpu("1.26.0") == 12
    assert cuda_major_for_onnxruntime_gpu("1.31.1") == 13


# ------------------------------------------------------------------------- podman, for real


class Podman:
    """Runs podman with this test's containers.conf and the host's CA bundle for pip."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.env = {**os.environ, "CONTAINERS_CONF": str(self._write_containers_conf())}

    def _write_containers_conf(self) -> Path:
        """Podman's default ulimits are above this machine's hard limits, and runc fails to
        start any container then. Ask for the hard limits (nproc capped at pid_max: the
        kernel refuses more here)."""
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        nofile = _finite(nofile, 1 << 20)
        nproc = min(_finite(nproc, pid_max), pid_max)
        limits = [f"nofile={nofile}:{nofile}", f"nproc={nproc}:{nproc}"]
        conf = self.workdir / "containers.conf"
        conf.write_text(f"[containers]\ndefault_ulimits = {json.dumps(limits)}\n")
        return conf

    def __call__(self, *args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
        kwargs.setdefault("capture_output", True)
        return subprocess.run(["podman", *args], env=self.env, text=True, timeout=timeout, **kwargs)

    def build_mounts(self) -> list[str]:
        """A CA bundle for pip inside the build, when the host trusts more than certifi does
        (a TLS-inspecting proxy): mounted read-only for the build only, never in the image."""
        bundle = _host_ca_bundle()
        if bundle is None:
            return []
        pip_conf = self.workdir / "pip.conf"
        pip_conf.write_text("[global]\ncert = /run/host-ca-bundle.crt\n")
        return [
            "--volume",
            f"{bundle}:/run/host-ca-bundle.crt:ro",
            "--volume",
            f"{pip_conf}:/etc/pip.conf:ro",
        ]


def _finite(limit: int, default: int) -> int:
    return default if limit == resource.RLIM_INFINITY else limit


def _host_ca_bundle() -> Path | None:
    for candidate in (
        os.environ.get("PIP_CERT"),
        os.environ.get("SSL_CERT_FILE"),
        ssl.get_default_verify_paths().cafile,
        "/etc/ssl/certs/ca-certificates.crt",
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    return None


def _full_name(image: str) -> str:
    """podman's name for a short Docker Hub reference (python:3.11 → docker.io/library/...)."""
    first = image.split("/")[0]
    if "/" not in image:
        return f"docker.io/library/{image}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{image}"
    return image


def _debian_mirror() -> str:
    """The Debian mirror apt uses here, so debootstrap goes where the network allows."""
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    for source in sources:
        text = source.read_text(errors="replace") if source.is_file() else ""
        found = re.search(r"(?:URIs:|^deb)\s+(?:\[[^]]*\]\s+)?(\S+/debian)\s*$", text, re.M)
        if found:
            return found.group(1)
    return "http://deb.debian.org/debian"


def _stand_in_recipe(suite: str) -> str:
    """What the stand-in is made of; its hash labels the image, so a changed recipe rebuilds."""
    return f"{suite} minbase {STAND_IN_PACKAGES}\n{APT_DOCKER_CLEAN}"


def _ensure_base_image(podman: Podman, name: str, workdir: Path) -> None:
    suite = name.rsplit("-", 1)[-1]
    recipe = hashlib.sha256(_stand_in_recipe(suite).encode()).hexdigest()[:16]
    if podman("image", "exists", name).returncode == 0:
        labels = podman("image", "inspect", "--format", "{{json .Labels}}", name).stdout
        present = (json.loads(labels or "null") or {}).get(STAND_IN_LABEL)
        if present is None or present == recipe:
            return  # a real image of that name, or the current stand-in
    if shutil.which("debootstrap") is None:
        pytest.skip(f"no {name} and no debootstrap to make a stand-in: apt-get install debootstrap")
    root = workdir / "rootfs"
    made = subprocess.run(
        ["debootstrap", "--variant=minbase", f"--include={STAND_IN_PACKAGES}", suite, str(root)]
        + [_debian_mirror()],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if made.returncode != 0:
        log = (made.stdout + made.stderr)[-1500:]
        pytest.skip(f"debootstrap {suite} failed, no stand-in base image:\n{log}")
    (root / "etc/apt/apt.conf.d/docker-clean").write_text(APT_DOCKER_CLEAN)
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
        for path in (root / junk).glob("*"):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    changes = ["ENV LANG=C.UTF-8", 'CMD ["python3"]', f"LABEL {STAND_IN_LABEL}={recipe}"]
    imported = podman(
        "import", *[arg for c in changes for arg in ("--change", c)], "-", name, stdin=tar.stdout
    )
    tar.wait()
    shutil.rmtree(root)
    assert imported.returncode == 0, imported.stderr


@pytest.fixture(scope="module")
def podman(tmp_path_factory) -> Podman:
    """podman, able to run a container from the (stand-in) base image, or a skip saying why."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (tests/run.sh installs it with apt when it can)")
    if os.geteuid() != 0:
        pytest.skip("the image build needs root (rootful podman, debootstrap for the base)")
    workdir = tmp_path_factory.mktemp("podman")
    tool = Podman(workdir)
    base = _full_name(arg_defaults()["PYTHON_IMAGE"])
    _ensure_base_image(tool, base, workdir)
    probe = tool("run", "--rm", "--network", "host", "--pull=never", base, "true")
    if probe.returncode != 0:
        pytest.skip(f"podman cannot run containers here: {probe.stderr.strip()[-600:]}")
    return tool


@pytest.fixture(scope="module")
def image(podman: Podman) -> str:
    """The CPU image, built from this checkout (`--format docker` keeps the HEALTHCHECK)."""
    before = podman("image", "inspect", "--format", "{{.Id}}", IMAGE).stdout.strip()
    built = podman(
        "build",
        "--format", "docker",
        "--network", "host",
        "--pull=never",
        *podman.build_mounts(),
        "--tag", IMAGE,
        str(REPO),
        timeout=1800,
    )  # fmt: skip
    assert built.returncode == 0, (built.stdout + built.stderr)[-4000:]
    after = podman("image", "inspect", "--format", "{{.Id}}", IMAGE).stdout.strip()
    if before and before != after:
        podman("rmi", before)  # the previous build; shared cached layers stay
    return IMAGE


@pytest.fixture
def container(podman: Podman, image: str) -> Iterator[str]:
    """A running container of the image (the UCI engine, waiting on its open stdin)."""
    name = f"oneply-test-{uuid.uuid4().hex[:8]}"
    started = podman("run", OFFLINE, "--detach", "--interactive", "--name", name, image, "uci")
    assert started.returncode == 0, started.stderr
    try:
        yield name
    finally:
        podman("rm", "--force", "--time", "0", name)


@pytest.mark.slow
def test_image_user_contents_and_no_torch(podman, image):
    probe = (
        "import glob, importlib.util, json, os; print(json.dumps({"
        "'uid': os.getuid(), 'torch': importlib.util.find_spec('torch') is not None,"
        "'onnxruntime': importlib.util.find_spec('onnxruntime') is not None,"
        "'build': os.path.exists('/app/build'),"
        "'egg_info': glob.glob('/app/**/*.egg-info', recursive=True)"
        " + glob.glob('/opt/oneply/**/*.egg-info', recursive=True),"
        "'tests': os.path.exists('/app/tests'), 'stockfish': os.path.exists('/usr/games/stockfish')"
        "}))"
    )
    ran = podman("run", OFFLINE, "--rm", "--entrypoint", "python", image, "-c", probe)
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    assert found == {
        "uid": 10001,
        "torch": False,
        "onnxruntime": True,
        "build": False,
        "egg_info": [],
        "tests": False,
        "stockfish": True,
    }


@pytest.mark.slow
def test_image_health_command(podman, image):
    ran = podman("run", OFFLINE, "--rm", image, "health")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "model ok" in ran.stdout and "oneply-small.onnx" in ran.stdout


@pytest.mark.slow
def test_image_plays_a_uci_move_over_stdin(podman, image):
    """The real python-chess UCI client talks to `podman run -i IMAGE uci`, as a GUI would."""
    command = ["podman", "run", OFFLINE, "--interactive", "--rm", image, "uci"]
    engine = chess.engine.SimpleEngine.popen_uci(command, env=podman.env, timeout=180)
    try:
        board = chess.Board()
        board.push_uci("e2e4")
        move = engine.play(board, chess.engine.Limit(time=1.0)).move
        assert move in board.legal_moves
    finally:
        engine.quit()


@pytest.mark.slow
def test_image_healthcheck_passes_and_fails_on_a_stale_bot_heartbeat(podman, container):
    config = podman("inspect", "--format", "{{json .Config.Healthcheck}}", container).stdout
    assert "oneply" in json.loads(config)["Test"], config
    healthy = podman("healthcheck", "run", container)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    # a bot whose event stream went silent long ago
    stale = podman("exec", container, "touch", "-d", "@0", "/tmp/oneply-bot.heartbeat")
    assert stale.returncode == 0, stale.stderr
    unhealthy = podman("healthcheck", "run", container)
    assert unhealthy.returncode != 0, unhealthy.stdout

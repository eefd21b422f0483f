# oneply: the Lichess bot (default) or the UCI engine, in one image.
#   CPU:  docker build -t oneply .
#   GPU:  docker build --target gpu -t oneply:gpu .
# Only inference dependencies are installed (no torch); Stockfish is there for the mate fallback.
# The build context is the repository filtered by .dockerignore: every package folder
# pyproject.toml names comes along without being listed here.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
# CUDA_IMAGE and ONNXRUNTIME_GPU go together: each onnxruntime-gpu release is built for one CUDA
# major (1.19-1.26: CUDA 12, 1.27 on: CUDA 13); a mismatch silently falls back to the CPU.
# tests/bot/test_docker.py checks the pair.
ARG CUDA_IMAGE=nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04
ARG ONNXRUNTIME_GPU=1.26.0

# ---------------------------------------------------------------------------- CPU (default)
FROM ${PYTHON_IMAGE} AS cpu
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/oneply/bin:/usr/games:$PATH \
    ONEPLY_MODEL=/app/models/oneply-small.onnx \
    ONEPLY_HEARTBEAT=/tmp/oneply-bot.heartbeat
# build-time checks of the compiled core's install: Python's headers present; the core built
ARG HEADERS_PRESENT="import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"
ARG NATIVE_BUILT="from oneply.engine.facts import native; assert native.available(), native.REASON"
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends stockfish \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# install: inference only; pip builds in the source tree, so drop what it leaves there
# (--upgrade-deps: a current pip, whatever the base image bundles, so every package installs
# from a wheel with .dist-info metadata). The compiled core (engine/csrc) is built by a C
# compiler that leaves in the same layer (and Python's headers where the base lacks them); the
# build stops if the core did not build.
# hadolint ignore=DL3008,SC2086
RUN apt-get update \
    && dev="gcc libc6-dev" \
    && { python3 -c "$HEADERS_PRESENT" || dev="$dev python3-dev"; } \
    && apt-get install -y --no-install-recommends $dev \
    && python3 -m venv --upgrade-deps /opt/oneply && /opt/oneply/bin/pip install --no-cache-dir /app \
    && /opt/oneply/bin/python -c "$NATIVE_BUILT" \
    && apt-get purge -y --auto-remove $dev && rm -rf /var/lib/apt/lists/* \
    && rm -rf /app/build /app/*.egg-info
RUN useradd --create-home --uid 10001 oneply && mkdir -p /app/games && chown oneply /app/games
USER 10001
HEALTHCHECK --interval=60s --timeout=20s --start-period=30s --retries=3 CMD ["oneply", "health"]
ENTRYPOINT ["oneply"]
CMD ["bot", "--config", "/app/config.yml"]

# ---------------------------------------------------------------------------- GPU (CUDA)
FROM ${CUDA_IMAGE} AS gpu
ARG ONNXRUNTIME_GPU
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/oneply/bin:/usr/games:$PATH \
    ONEPLY_MODEL=/app/models/oneply-small.onnx \
    ONEPLY_HEARTBEAT=/tmp/oneply-bot.heartbeat
# build-time checks of the compiled core's install: Python's headers present; the core built
ARG HEADERS_PRESENT="import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"
ARG NATIVE_BUILT="from oneply.engine.facts import native; assert native.available(), native.REASON"
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv stockfish \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# install: inference only (the compiled core as in the CPU stage), with the CUDA build of
# onnxruntime in place of the CPU one
# hadolint ignore=DL3008,SC2086
RUN apt-get update \
    && dev="gcc libc6-dev" \
    && { python3 -c "$HEADERS_PRESENT" || dev="$dev python3-dev"; } \
    && apt-get install -y --no-install-recommends $dev \
    && python3 -m venv --upgrade-deps /opt/oneply && /opt/oneply/bin/pip install --no-cache-dir /app \
    && /opt/oneply/bin/python -c "$NATIVE_BUILT" \
    && apt-get purge -y --auto-remove $dev && rm -rf /var/lib/apt/lists/* \
    && rm -rf /app/build /app/*.egg-info \
    && /opt/oneply/bin/pip uninstall -y onnxruntime \
    && /opt/oneply/bin/pip install --no-cache-dir "onnxruntime-gpu==${ONNXRUNTIME_GPU}"
RUN useradd --create-home --uid 10001 oneply && mkdir -p /app/games && chown oneply /app/games
USER 10001
HEALTHCHECK --interval=60s --timeout=20s --start-period=30s --retries=3 CMD ["oneply", "health"]
ENTRYPOINT ["oneply"]
CMD ["bot", "--config", "/app/config.yml"]

# The default build target is the last stage; keep CPU the default.
FROM cpu AS default

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
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends stockfish \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# install: inference only; pip builds in the source tree, so drop what it leaves there
# (--upgrade-deps: a current pip, whatever the base image bundles, so every package installs
# from a wheel with .dist-info metadata)
RUN python3 -m venv --upgrade-deps /opt/oneply && /opt/oneply/bin/pip install --no-cache-dir /app \
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
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv stockfish \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# install: inference only, with the CUDA build of onnxruntime in place of the CPU one
RUN python3 -m venv --upgrade-deps /opt/oneply && /opt/oneply/bin/pip install --no-cache-dir /app \
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

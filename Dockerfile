# oneply: the Lichess bot (default) or the UCI engine, in one image.
#   CPU:  docker build -t oneply .
#   GPU:  docker build --target gpu -t oneply:gpu .
# Only inference dependencies are installed (no torch); Stockfish is there for the mate fallback.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG CUDA_IMAGE=nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04

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
COPY pyproject.toml README.md config.yml ./
COPY engine engine
COPY bot bot
COPY training training
COPY models models
# install: inference only
RUN python3 -m venv /opt/oneply && /opt/oneply/bin/pip install --no-cache-dir /app
RUN useradd --create-home --uid 10001 oneply && mkdir -p /app/games && chown oneply /app/games
USER 10001
HEALTHCHECK --interval=60s --timeout=20s --start-period=30s --retries=3 CMD ["oneply", "health"]
ENTRYPOINT ["oneply"]
CMD ["bot", "--config", "/app/config.yml"]

# ---------------------------------------------------------------------------- GPU (CUDA)
FROM ${CUDA_IMAGE} AS gpu
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
COPY --from=cpu /app /app
# install: inference only, with the CUDA build of onnxruntime in place of the CPU one
RUN python3 -m venv /opt/oneply && /opt/oneply/bin/pip install --no-cache-dir /app \
    && /opt/oneply/bin/pip uninstall -y onnxruntime \
    && /opt/oneply/bin/pip install --no-cache-dir "onnxruntime-gpu>=1.17"
RUN useradd --create-home --uid 10001 oneply && mkdir -p /app/games && chown oneply /app/games
USER 10001
HEALTHCHECK --interval=60s --timeout=20s --start-period=30s --retries=3 CMD ["oneply", "health"]
ENTRYPOINT ["oneply"]
CMD ["bot", "--config", "/app/config.yml"]

# The default build target is the last stage; keep CPU the default.
FROM cpu AS default

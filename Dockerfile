# syntax=docker/dockerfile:1
# gpubot: the bot (`gpubot serve`, the default) and the node agent (`gpubot agent`) in one image.
#   docker build -t REGISTRY/gpubot:0.1.0 .
# The agent needs no NVIDIA libraries here: the NVIDIA container runtime mounts the node's
# libnvidia-ml.so and nvidia-smi into its container (see helm/gpubot).

# -- builder: a wheel of this checkout, installed with its dependencies into a venv ----------
FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gpubot ./gpubot
COPY runbooks ./runbooks
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/gpubot \
 && /opt/gpubot/bin/pip install /wheels/*.whl

# -- final: the same slim Python, the venv, a non-root user; no compilers, no pip cache ------
FROM python:3.11-slim
LABEL org.opencontainers.image.title="gpubot" \
      org.opencontainers.image.description="Incident-response bot for GPU Kubernetes clusters" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/gpubot/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 gpubot \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/gpubot --no-create-home \
      --shell /usr/sbin/nologin gpubot \
 && mkdir -p /var/lib/gpubot \
 && chown 10001:10001 /var/lib/gpubot
COPY --from=builder /opt/gpubot /opt/gpubot
USER 10001:10001
WORKDIR /var/lib/gpubot
# 8080: the bot's webhook, probes and metrics; 9400: the node agent's API.
EXPOSE 8080 9400
ENTRYPOINT ["gpubot"]
CMD ["serve", "--host", "0.0.0.0"]

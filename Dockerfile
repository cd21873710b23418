# The worker image; compose.yaml also runs the seeder and the load generator from it.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # bench/ and deploy/ are run as modules from the source tree, not installed.
    PYTHONPATH=/app

WORKDIR /app
COPY pyproject.toml README.md ./
COPY contracts ./contracts
COPY worker ./worker
RUN pip install '.[server]'
COPY bench ./bench
COPY deploy ./deploy

# Unprivileged; the index lives in the container (each replica builds its own from the
# stream, so it is never shared through a volume).
RUN useradd --create-home --uid 10001 sessionquery \
    && mkdir -p /data /corpus /app/bench/out \
    && chown sessionquery /data /corpus /app/bench/out
USER sessionquery
ENV SESSIONQUERY_DB_PATH=/data/index.sqlite \
    SESSIONQUERY_LOG_FORMAT=json

# SIGTERM is a graceful stop (in-flight work finishes, then the connection drains).
STOPSIGNAL SIGTERM
ENTRYPOINT ["sessionquery"]
CMD ["serve"]

# denpex serve: the HTTP API, the paste page (/) and the API docs (/docs), in one process.
#   docker build -t denpex .
#   docker run -p 8080:8080 -v "$PWD/tenants.json:/etc/denpex/tenants.json:ro" denpex
# Incidents go to a SQLite file in /var/lib/denpex (a volume); replicas share a PostgreSQL
# store instead, with one key for queued job bodies:
#   -e DENPEX_STORE=postgresql://user:password@host/db
#   -e DENPEX_JOB_BODY_KEY=<python -c "from denpex.store.sealing import new_key; print(new_key())">
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    DENPEX_DATA_DIR=/var/lib/denpex \
    DENPEX_CACHE_DIR=/var/cache/denpex

WORKDIR /src
COPY pyproject.toml README.md ./
COPY engine engine
COPY rules rules
COPY prompts prompts
RUN pip install --no-cache-dir . psycopg2-binary \
    && useradd --system --uid 10001 --home-dir /var/lib/denpex denpex \
    && mkdir -p /var/lib/denpex /var/cache/denpex /etc/denpex \
    && chown denpex /var/lib/denpex /var/cache/denpex \
    && chmod 0700 /var/lib/denpex

USER denpex
WORKDIR /var/lib/denpex
VOLUME ["/var/lib/denpex"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/readyz', timeout=4)"]
ENTRYPOINT ["denpex", "serve", "--host", "0.0.0.0", "--port", "8080", "--tenants", "/etc/denpex/tenants.json"]

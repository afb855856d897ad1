# ticketproxy: an OpenAI-compatible endpoint answered by people on GitHub.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proxy ./proxy
COPY ticketing ./ticketing
COPY auth ./auth
RUN pip install --no-cache-dir . && useradd --create-home ticketproxy
USER ticketproxy
ENV TICKETPROXY_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz')"
ENTRYPOINT ["ticketproxy"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]

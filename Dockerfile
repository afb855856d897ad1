# ticketproxy: an OpenAI-compatible endpoint answered by people on GitHub.
# Pinned to a patch release and Debian release, so a rebuild gets the same interpreter.
FROM python:3.11.11-slim-bookworm
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proxy ./proxy
COPY ticketing ./ticketing
COPY auth ./auth
COPY embedded_github ./embedded_github
# /data belongs to the user the server runs as: a named volume mounted there starts with
# this ownership, so the non-root server can write its store.
RUN pip install --no-cache-dir . && useradd --create-home --uid 10001 --user-group ticketproxy \
    && mkdir -p /data && chown ticketproxy:ticketproxy /data
USER ticketproxy
ENV TICKETPROXY_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz')"
ENTRYPOINT ["ticketproxy"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]

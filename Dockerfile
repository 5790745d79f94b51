# coordsim on a cluster image, built by the README's install (`bash scripts/setup`), so what the tests check of
# setup is what builds the image.
#
# The base names its Debian release: python:3.11-slim follows Debian's current release, and on Debian 13
# (trixie) its `openjdk-17-jre-headless` install failed, as Debian 13 has no OpenJDK 17. Debian 12 (bookworm)
# has it, and Debian 12 with OpenJDK 17 is what every test and benchmark ran on. Spark 4 also runs on Java 21:
# with the -slim-trixie tag, the same setup installs Debian 13's default-jre-headless (OpenJDK 21) instead.
FROM python:3.11-slim-bookworm

WORKDIR /opt/coordsim
COPY pyproject.toml README.md ./
COPY scripts ./scripts
COPY state ./state
COPY streaming ./streaming
COPY simulations ./simulations
COPY tableio ./tableio
COPY conf ./conf

# procps: Spark's launch scripts (load-spark-env.sh, spark-daemon.sh) call `ps`.
# Neither apt's lists nor pip's cache stay in the image.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends procps \
    && PIP_NO_CACHE_DIR=1 bash scripts/setup \
    && rm -rf /var/lib/apt/lists/*

# Spark's Python workers must use the interpreter that has pandas and pyarrow: setup's .venv.
ENV PATH=/opt/coordsim/.venv/bin:$PATH \
    PYSPARK_PYTHON=/opt/coordsim/.venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/coordsim/.venv/bin/python \
    COORDSIM_CONF_DIR=/opt/coordsim/conf

ENTRYPOINT ["coordsim"]
CMD ["--help"]

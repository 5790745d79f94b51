# coordsim on a cluster image, built by the README's install (`bash scripts/setup`), so what the tests check of
# setup is what builds the image.
#
# The base names its Debian release: python:3.11-slim follows Debian's current release, and on Debian 13
# (trixie) its `openjdk-17-jre-headless` install failed, as Debian 13 has no OpenJDK 17. Debian 12 (bookworm)
# has it, and Debian 12 with OpenJDK 17 is what every test and benchmark ran on. Spark 4 also runs on Java 21:
# with the -slim-trixie tag, the same setup installs Debian 13's default-jre-headless (OpenJDK 21) instead.
#
# The native engine (native/, docs/native.md) is built in a stage of its own, on the official Rust image of the
# same Debian release, into a wheel (`pip wheel ./native`: the same maturin build setup runs); the image then
# installs that wheel. The Rust toolchain (hundreds of MB) stays in the build stage, so the image grows by
# the wheel alone (under 0.5 MB), where rustup in the image would keep the toolchain in it.
FROM rust:1-slim-bookworm AS native
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
COPY native /build/native
RUN python3 -m venv /build/venv \
    && PIP_NO_CACHE_DIR=1 /build/venv/bin/python -m pip wheel --no-deps /build/native -w /build/wheels

FROM python:3.11-slim-bookworm

WORKDIR /opt/coordsim
COPY pyproject.toml README.md ./
COPY scripts ./scripts
COPY state ./state
COPY streaming ./streaming
COPY simulations ./simulations
COPY tableio ./tableio
COPY conf ./conf

COPY --from=native /build/wheels /tmp/wheels

# procps: Spark's launch scripts (load-spark-env.sh, spark-daemon.sh) call `ps`. Setup finds no cargo here
# (the native engine was built above) and says so; the wheel goes into its .venv.
# Neither apt's lists nor pip's cache stay in the image.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends procps \
    && PIP_NO_CACHE_DIR=1 bash scripts/setup \
    && PIP_NO_CACHE_DIR=1 .venv/bin/python -m pip install --no-deps /tmp/wheels/coordsim_native-*.whl \
    && rm -rf /var/lib/apt/lists/* /tmp/wheels

# Spark's Python workers must use the interpreter that has pandas and pyarrow: setup's .venv.
ENV PATH=/opt/coordsim/.venv/bin:$PATH \
    PYSPARK_PYTHON=/opt/coordsim/.venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/coordsim/.venv/bin/python \
    COORDSIM_CONF_DIR=/opt/coordsim/conf

ENTRYPOINT ["coordsim"]
CMD ["--help"]

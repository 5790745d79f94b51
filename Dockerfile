# coordsim on a cluster image: the same install as the README (Python 3.11, a Java 17 runtime, the package).
FROM python:3.11-slim

RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/coordsim
COPY pyproject.toml README.md ./
COPY state ./state
COPY streaming ./streaming
COPY simulations ./simulations
COPY conf ./conf
RUN pip install --no-cache-dir .

# Spark's Python workers must use the interpreter that has pandas and pyarrow.
ENV PYSPARK_PYTHON=/usr/local/bin/python \
    PYSPARK_DRIVER_PYTHON=/usr/local/bin/python \
    COORDSIM_CONF_DIR=/opt/coordsim/conf

ENTRYPOINT ["coordsim"]
CMD ["--help"]

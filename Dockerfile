# syntax=docker/dockerfile:1.7
# The llmprobe image the Helm chart (helm/llmprobe, image.repository) runs. Two ways to
# build it, one final stage (the last one below) for both:
#
#   From the internet, with Docker (the binary built in the `build` stage):
#     docker build --build-arg LLMPROBE_GIT_COMMIT=$(git rev-parse --short=12 HEAD) -t llmprobe:0.1.0 .
#   Offline, with podman (scripts/image): a binary built outside, a runtime base made of
#   Debian packages, the same final stage:
#     scripts/image            # localhost/llmprobe:0.1.0 and :latest
#
#   docker run --rm -p 9464:9464 -v $PWD/config.yaml:/etc/llmprobe/config.yaml:ro llmprobe:0.1.0
#
# The runtime base is distroless "cc": no shell, no package manager, only glibc, libgcc,
# CA certificates, tzdata and /etc/passwd with the nonroot user. It is distroless/static
# plus the C runtime a glibc Rust binary links to; glibc rather than a static musl build
# because musl's allocator serialises the many threads a `bench --sweep` at high rate
# runs (the binary has no other native dependency: rustls with ring, no OpenSSL). The
# :nonroot tag runs as uid/gid 65532, the chart's podSecurityContext.runAsUser.

ARG RUST_VERSION=1.95.0
# The final stage's base: distroless from its registry, or (scripts/image) the same
# Debian 12 packages assembled offline into localhost/llmprobe-base.
ARG RUNTIME_BASE=gcr.io/distroless/cc-debian12:nonroot
# The stage whose /out the final stage copies: `build` (cargo in Docker) or `prebuilt`
# (out/ of the build context, laid out as /out below; what scripts/image passes).
ARG BINARY=build

FROM rust:${RUST_VERSION}-bookworm AS build
# Pinned here once; scripts/install-tools reads these two lines for the offline build.
ARG CARGO_AUDITABLE_VERSION=0.7.7
ARG CARGO_CYCLONEDX_VERSION=0.5.9
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    cargo install --locked --version "${CARGO_AUDITABLE_VERSION}" cargo-auditable \
 && cargo install --locked --version "${CARGO_CYCLONEDX_VERSION}" cargo-cyclonedx
# The build context has no .git, so build.rs cannot ask git for `--version`'s commit:
# pass it as above. Without it the version says "commit unknown".
ARG LLMPROBE_GIT_COMMIT=""
ENV LLMPROBE_GIT_COMMIT=${LLMPROBE_GIT_COMMIT}
WORKDIR /src
COPY . .
# `cargo auditable` embeds the dependency list in the binary (section .dep-v0, read by
# `cargo audit bin`, trivy, grype); `cargo cyclonedx` writes the SBOM of the binary.
# Cache mounts keep the registry and target dir between builds; the binary is copied out
# of the cached target dir because cache mounts are not part of the image.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo auditable build --release --locked --bin llmprobe \
 && cargo cyclonedx --describe binaries --format json --spec-version 1.5 --no-build-deps \
 && install -D -m 0755 target/release/llmprobe /out/bin/llmprobe \
 && install -D -m 0644 llmprobe_bin.cdx.json /out/sbom/llmprobe.cdx.json

FROM scratch AS prebuilt
COPY out/ /out/

FROM ${BINARY} AS binary

# The one final stage of both builds: tests/tools/dockerfile.sh checks it against the
# chart, tests/tools/image.sh runs what it builds the way the chart's pod spec says.
FROM ${RUNTIME_BASE}
ARG LLMPROBE_VERSION=0.1.0
ARG LLMPROBE_GIT_COMMIT=""
ARG LLMPROBE_SOURCE=""
LABEL org.opencontainers.image.title="llmprobe" \
      org.opencontainers.image.description="Continuous SLO prober, load tester and capacity model for OpenAI-compatible LLM inference servers" \
      org.opencontainers.image.version="${LLMPROBE_VERSION}" \
      org.opencontainers.image.revision="${LLMPROBE_GIT_COMMIT}" \
      org.opencontainers.image.source="${LLMPROBE_SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=binary /out/bin/llmprobe /usr/local/bin/llmprobe
COPY --from=binary /out/sbom/llmprobe.cdx.json /usr/share/doc/llmprobe/sbom.cdx.json
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["llmprobe"]
CMD ["daemon", "--config", "/etc/llmprobe/config.yaml"]

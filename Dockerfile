# syntax=docker/dockerfile:1.7
# The llmprobe image the Helm chart (helm/llmprobe, image.repository) runs:
#   docker build -t llmprobe:0.1.0 .
#   docker run --rm -p 9464:9464 -v $PWD/config.yaml:/etc/llmprobe/config.yaml:ro llmprobe:0.1.0
#
# Stage 1 builds the release binary with the toolchain pinned in rust-toolchain.toml.
# Stage 2 is distroless "cc": no shell, no package manager, only glibc, libgcc and CA
# certificates. It is distroless/static plus the C runtime a glibc Rust binary links to;
# glibc rather than a static musl build because musl's allocator serialises the many
# threads a `bench --sweep` at high rate runs (the binary has no other native dependency:
# rustls with ring, no OpenSSL). The :nonroot tag runs as uid/gid 65532, the chart's
# podSecurityContext.runAsUser.

ARG RUST_VERSION=1.95.0
FROM rust:${RUST_VERSION}-bookworm AS build
# The build context has no .git, so build.rs cannot ask git for `--version`'s commit:
#   docker build --build-arg LLMPROBE_GIT_COMMIT=$(git rev-parse --short=12 HEAD) .
# Without it the version says "commit unknown".
ARG LLMPROBE_GIT_COMMIT=""
ENV LLMPROBE_GIT_COMMIT=${LLMPROBE_GIT_COMMIT}
WORKDIR /src
COPY . .
# Cache mounts keep the registry and target dir between builds; the binary is copied out
# of the cached target dir because cache mounts are not part of the image.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin llmprobe \
 && install -D -m 0755 target/release/llmprobe /out/llmprobe

FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="llmprobe" \
      org.opencontainers.image.description="Continuous SLO prober, load tester and capacity model for OpenAI-compatible LLM inference servers" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/llmprobe /usr/local/bin/llmprobe
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["llmprobe"]
CMD ["daemon", "--config", "/etc/llmprobe/config.yaml"]

# The argocd-pull controller image: a static binary on a distroless base, numeric non-root user
# (the Deployment sets runAsNonRoot). Build from the repository root:
#   docker build --build-arg VERSION=$(git describe --tags --always) -t ghcr.io/argocd-pull/argocd-pull:<tag> .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags "-s -w -X github.com/argocd-pull/argocd-pull/internal/cli.version=${VERSION}" \
    -o /out/argocd-pull ./cmd/argocd-pull

# distroless/static has the CA bundle the optional OCM Search client uses, and nothing else.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/argocd-pull /argocd-pull
USER 65532:65532
ENTRYPOINT ["/argocd-pull"]
CMD ["controller"]

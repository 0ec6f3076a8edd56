package sandbox

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// The images of the lab's node. These machines reach no container registry, so the lab writes one
// image itself, an OCI archive (image-spec v1.1 layout, in a tar) that containerd imports, from
// one static program of the project's (hack/tools/kube/lab-workload): /pause for the Pods'
// sandboxes, and the same program under the names of the images the lab's Git asks for, where it
// serves HTTP and writes log lines saying which image it stands in for.

// PauseImage is the sandbox image of the lab's containerd (its CRI plugin's sandbox_image).
const PauseImage = "argocd-pull.lab/pause:lab"

// StandInImages are the images the lab's manifests name, which its node runs as the stand-in.
var StandInImages = []string{"registry.invalid/views-web:1", "registry.invalid/guestbook-ui:1"}

// ociBlob is one content-addressed blob of an archive.
type ociBlob struct {
	mediaType string
	data      []byte
}

func (b ociBlob) digest() string {
	sum := sha256.Sum256(b.data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (b ociBlob) descriptor() map[string]any {
	return map[string]any{"mediaType": b.mediaType, "digest": b.digest(), "size": len(b.data)}
}

// writeNodeImages writes to path an OCI archive of one image per name in refs: a single layer
// holding program as /pause and /workload, its entrypoint /pause for PauseImage and /workload,
// with LAB_IMAGE naming the image, for every other name. The archive is the same for the same
// program and names.
func writeNodeImages(path, program string, refs []string) error {
	bin, err := os.ReadFile(program)
	if err != nil {
		return err
	}
	layer, diffID, err := programLayer(bin)
	if err != nil {
		return err
	}
	blobs := []ociBlob{layer}
	var manifests []any
	for _, ref := range refs {
		entrypoint := []string{"/workload"}
		env := []string{"PATH=/", "LAB_IMAGE=" + ref}
		if ref == PauseImage {
			entrypoint, env = []string{"/pause"}, []string{"PATH=/"}
		}
		config, err := json.Marshal(map[string]any{
			"architecture": runtime.GOARCH, "os": "linux",
			"config": map[string]any{"Entrypoint": entrypoint, "Env": env, "User": "65532:65532"},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		})
		if err != nil {
			return err
		}
		cb := ociBlob{"application/vnd.oci.image.config.v1+json", config}
		manifest, err := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
			"config": cb.descriptor(), "layers": []any{layer.descriptor()},
		})
		if err != nil {
			return err
		}
		mb := ociBlob{"application/vnd.oci.image.manifest.v1+json", manifest}
		blobs = append(blobs, cb, mb)
		d := mb.descriptor()
		d["annotations"] = map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}
		manifests = append(manifests, d)
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	if err := writeTarFile(tw, "oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := writeTarFile(tw, "index.json", 0o644, index); err != nil {
		return err
	}
	written := map[string]bool{}
	for _, b := range blobs {
		name := "blobs/sha256/" + strings.TrimPrefix(b.digest(), "sha256:")
		if written[name] {
			continue
		}
		written[name] = true
		if err := writeTarFile(tw, name, 0o644, b.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// programLayer is the gzipped layer holding bin as /pause and /workload, and its diff id (the
// digest of the uncompressed tar).
func programLayer(bin []byte) (ociBlob, string, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, name := range []string{"pause", "workload"} {
		if err := writeTarFile(tw, name, 0o755, bin); err != nil {
			return ociBlob{}, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return ociBlob{}, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return ociBlob{}, "", err
	}
	if _, err := io.Copy(zw, &raw); err != nil {
		return ociBlob{}, "", err
	}
	if err := zw.Close(); err != nil {
		return ociBlob{}, "", err
	}
	return ociBlob{"application/vnd.oci.image.layer.v1.tar+gzip", gz.Bytes()}, "sha256:" + hex.EncodeToString(sum[:]), nil
}

func writeTarFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	_, err := tw.Write(data)
	return err
}

package sandbox

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The node's archive holds one image per name, each an OCI manifest whose blobs are in the
// archive under their digests, with one layer holding the program as /pause and /workload: the
// pause image runs /pause, every other /workload, told which image it stands in for.
func TestTheNodesImagesAreOneProgramUnderEachName(t *testing.T) {
	dir := t.TempDir()
	program := filepath.Join(dir, "program")
	if err := os.WriteFile(program, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "images.tar")
	refs := append([]string{PauseImage}, StandInImages...)
	if err := writeNodeImages(archive, program, refs); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, mustRead(t, archive))
	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	blob := func(digest string) []byte {
		data, ok := files["blobs/sha256/"+digest[len("sha256:"):]]
		if !ok {
			t.Fatalf("blob %s is not in the archive", digest)
		}
		if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != digest {
			t.Fatalf("blob %s does not have its digest", digest)
		}
		return data
	}
	var names []string
	for _, m := range index.Manifests {
		name := m.Annotations["io.containerd.image.name"]
		names = append(names, name)
		var manifest struct {
			Config struct{ Digest string }   `json:"config"`
			Layers []struct{ Digest string } `json:"layers"`
		}
		if err := json.Unmarshal(blob(m.Digest), &manifest); err != nil || len(manifest.Layers) != 1 {
			t.Fatalf("%s: manifest %v, %d layers", name, err, len(manifest.Layers))
		}
		var config struct {
			Config struct{ Entrypoint, Env []string } `json:"config"`
			RootFS struct {
				DiffIDs []string `json:"diff_ids"`
			} `json:"rootfs"`
		}
		if err := json.Unmarshal(blob(manifest.Config.Digest), &config); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob(manifest.Layers[0].Digest)))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(raw); len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("%s: diff ids %v, want the uncompressed layer's digest", name, config.RootFS.DiffIDs)
		}
		layer := readTar(t, raw)
		for _, f := range []string{"pause", "workload"} {
			if string(layer[f]) != "#!/bin/true\n" {
				t.Errorf("%s: /%s is %q, want the program", name, f, layer[f])
			}
		}
		want := []string{"/workload"}
		if name == PauseImage {
			want = []string{"/pause"}
		} else if !slices.Contains(config.Config.Env, "LAB_IMAGE="+name) {
			t.Errorf("%s: env %v, want LAB_IMAGE naming it", name, config.Config.Env)
		}
		if !slices.Equal(config.Config.Entrypoint, want) {
			t.Errorf("%s: entrypoint %v, want %v", name, config.Config.Entrypoint, want)
		}
	}
	if !slices.Equal(names, refs) {
		t.Errorf("images %v, want %v", names, refs)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readTar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

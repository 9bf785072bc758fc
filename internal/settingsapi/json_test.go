package settingsapi_test

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// getJSON sends req and decodes its 200 answer into out.
func getJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.Errorf("%s: %s: %s", req.URL, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

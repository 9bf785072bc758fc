package devicemanager

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpustack/gpustack-operator/providers"
)

// Registry holds the device manager's metrics; `device-manager --metrics-bind-address` serves it.
var Registry = prometheus.NewRegistry()

// Cards is the number of cards an agent reports on its node, by manufacturer and health: a card that turns
// unhealthy moves from healthy to unhealthy here before any Pod fails on it.
var Cards = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "gpustack_device_cards",
	Help: "Accelerator cards the device manager reports on its node, by manufacturer and health (healthy or unhealthy).",
}, []string{"node", "manufacturer", "health"})

func init() { Registry.MustRegister(Cards) }

// ObserveCards sets a node's card gauges from what its agent detected: both healths of every manufacturer on
// the node, zero included; a manufacturer whose cards are gone loses its series.
func ObserveCards(node string, devices []providers.Device) {
	Cards.DeletePartialMatch(prometheus.Labels{"node": node})
	for _, d := range devices {
		Cards.WithLabelValues(node, d.Manufacturer, "healthy").Add(0)
		Cards.WithLabelValues(node, d.Manufacturer, "unhealthy").Add(0)
	}
	for _, d := range devices {
		health := "healthy"
		if d.Unhealthy {
			health = "unhealthy"
		}
		Cards.WithLabelValues(node, d.Manufacturer, health).Inc()
	}
}

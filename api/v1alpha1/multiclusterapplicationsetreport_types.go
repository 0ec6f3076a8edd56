package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status values written when a cluster has not reported a value.
const (
	StatusUnknown = "Unknown"
)

// MulticlusterApplicationSetReport aggregates, for one ApplicationSet, the status of the
// Applications it generated on every managed cluster. It has the ApplicationSet's name and
// namespace. The schema follows the Red Hat ACM documents field for field; all of it is written by
// the report controller, so there is no spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=appsetreport;appsetreports
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.statuses.summary.clusters`
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.statuses.summary.synced`
// +kubebuilder:printcolumn:name="NotSynced",type=string,JSONPath=`.statuses.summary.notSynced`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.statuses.summary.healthy`
// +kubebuilder:printcolumn:name="NotHealthy",type=string,JSONPath=`.statuses.summary.notHealthy`
// +kubebuilder:printcolumn:name="InProgress",type=string,JSONPath=`.statuses.summary.inProgress`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MulticlusterApplicationSetReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Statuses is the aggregated status of the ApplicationSet across clusters.
	// +optional
	Statuses AppConditions `json:"statuses,omitempty"`
}

// AppConditions is the aggregated view: deployed resources, one entry per cluster, and counts.
type AppConditions struct {
	// Resources lists the resources the ApplicationSet deployed, de-duplicated across clusters.
	// Resources that failed to deploy are not listed.
	// +optional
	Resources []ResourceRef `json:"resources,omitempty"`

	// ClusterConditions has one entry per managed cluster, sorted by cluster name.
	// +optional
	ClusterConditions []ClusterCondition `json:"clusterConditions,omitempty"`

	// Summary counts the clusters by sync and health status.
	// +optional
	Summary ReportSummary `json:"summary,omitempty"`

	// Notes say what the report could not show and why: resource lists a cluster did not return,
	// entries or messages cut to keep the report bounded at thousands of clusters.
	// +optional
	Notes []string `json:"notes,omitempty"`
}

// ResourceRef identifies one deployed resource.
type ResourceRef struct {
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ClusterCondition is the status of the ApplicationSet's Application on one managed cluster.
type ClusterCondition struct {
	// Cluster is the managed cluster name.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// App is "<appNamespace>/<appName>/<clusterNamespace>/<manifestWorkName>".
	// +optional
	App string `json:"app,omitempty"`

	// SyncStatus is the Argo CD sync status on the cluster (Synced, OutOfSync, Unknown).
	// +optional
	SyncStatus string `json:"syncStatus,omitempty"`

	// HealthStatus is the Argo CD health status on the cluster (Healthy, Progressing, Degraded,
	// Suspended, Missing, Unknown).
	// +optional
	HealthStatus string `json:"healthStatus,omitempty"`

	// OperationStatePhase is the phase of the last sync operation on the cluster.
	// +optional
	OperationStatePhase string `json:"operationStatePhase,omitempty"`

	// OperationStateStartedAt is when the last sync operation on the cluster started (RFC 3339).
	// +optional
	OperationStateStartedAt string `json:"operationStateStartedAt,omitempty"`

	// SyncRevision is the revision the cluster last synced to.
	// +optional
	SyncRevision string `json:"syncRevision,omitempty"`

	// Conditions carry the error and warning messages of a cluster that is not Synced and Healthy.
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
}

// Condition is one error or warning reported for a cluster, e.g. type SyncError.
type Condition struct {
	// +optional
	Type string `json:"type,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ReportSummary counts clusters. The counts are strings, as in the documents.
type ReportSummary struct {
	// Clusters is the number of clusters the ApplicationSet targets.
	// +optional
	Clusters string `json:"clusters,omitempty"`
	// Healthy counts clusters whose health is Healthy.
	// +optional
	Healthy string `json:"healthy,omitempty"`
	// InProgress counts clusters whose health is Progressing.
	// +optional
	InProgress string `json:"inProgress,omitempty"`
	// NotHealthy counts clusters whose health is anything but Healthy (Progressing included).
	// +optional
	NotHealthy string `json:"notHealthy,omitempty"`
	// NotSynced counts clusters whose sync status is anything but Synced.
	// +optional
	NotSynced string `json:"notSynced,omitempty"`
	// Synced counts clusters whose sync status is Synced.
	// +optional
	Synced string `json:"synced,omitempty"`
}

// MulticlusterApplicationSetReportList is a list of reports.
//
// +kubebuilder:object:root=true
type MulticlusterApplicationSetReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MulticlusterApplicationSetReport `json:"items"`
}

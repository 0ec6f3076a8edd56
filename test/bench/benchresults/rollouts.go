package benchresults

// RolloutReport is one run of the rollout scenarios (test/bench/results/rollouts/results.json):
// the real ApplicationSet controller and argocd-pull on a real apiserver, the clusters simulated
// (internal/test/simagent).
type RolloutReport struct {
	Run
	ArgoCDVersion string          `json:"argocdVersion,omitempty"`
	Results       []RolloutResult `json:"results"`
	// LimitRun is the sitting that measured the limits, when it was made apart from the pull-model
	// run above (--rollout-limit-only, for a run too long for one sitting); nil when they were
	// measured together. Its limits are in each result's Limit.
	LimitRun *Run `json:"limitRun,omitempty"`
}

// LoadRollouts reads a rollout results file.
func LoadRollouts(path string) (RolloutReport, error) { return load[RolloutReport](path) }

// defaultApplicationSetClientQPS is the ApplicationSet controller's client limit when
// ARGOCD_K8S_CLIENT_QPS is not set.
const defaultApplicationSetClientQPS = 50

// RolloutResult is what one size measured.
type RolloutResult struct {
	Clusters int `json:"clusters"`
	// SyncSeconds is how long each simulated Argo CD's sync runs; Steps the RollingSync steps.
	SyncSeconds float64 `json:"syncSeconds"`
	Steps       int     `json:"steps"`
	// CompareSeconds is how long each simulated Argo CD takes to compare a changed Application
	// with Git before it writes the status (simagent.Behaviour.Compare). 0 in runs made before it
	// was simulated, whose comparisons were written at once.
	CompareSeconds float64 `json:"compareSeconds,omitempty"`
	// ApplicationSetClientQPS is the ApplicationSet controller's client limit in requests per
	// second (ARGOCD_K8S_CLIENT_QPS, burst twice that; Argo CD's default is 50). 0 in runs made
	// before it was recorded, which ran with the default.
	ApplicationSetClientQPS float64 `json:"applicationSetClientQPS,omitempty"`
	// ApplicationSetMaxResourcesStatusCount caps the resources the ApplicationSet controller keeps
	// in an ApplicationSet's status (ARGOCD_APPLICATIONSET_CONTROLLER_MAX_RESOURCES_STATUS_COUNT);
	// 0 for every one, Argo CD's default.
	ApplicationSetMaxResourcesStatusCount int `json:"applicationSetMaxResourcesStatusCount,omitempty"`
	// Templating is how the ApplicationSets' templates are rendered: "go" (goTemplate, the step
	// derived from the cluster's name) or "default" (Argo CD's default templating over the cluster
	// generator, the step from a cluster label). "" in runs made before it was recorded: go.
	Templating string `json:"templating,omitempty"`

	// FirstRollout: a new RollingSync ApplicationSet, from its creation until every Application is
	// Synced and Healthy at its first revision.
	FirstRollout *Rollout `json:"firstRollout,omitempty"`
	// NewRevision: a new revision committed to it (its template's targetRevision).
	NewRevision *Rollout `json:"newRevision,omitempty"`
	// SecondCommit: a revision committed while the previous one is part-way through its steps.
	SecondCommit *SecondCommit `json:"secondCommit,omitempty"`
	// FailingRevision: a revision whose sync fails on every cluster, then the next one.
	FailingRevision *FailingRollout `json:"failingRevision,omitempty"`
	// NoRollingSync: a revision committed to an ApplicationSet without a strategy, whose
	// Applications sync themselves (automated sync policy).
	NoRollingSync *Rollout `json:"noRollingSync,omitempty"`
	// Concurrent: a new revision committed to several RollingSync ApplicationSets at once.
	Concurrent *Rollout `json:"concurrent,omitempty"`

	Controller               Usage `json:"controller"`
	ApplicationSetController Usage `json:"applicationSetController"`
	// ApplicationSetReconcile is how long the ApplicationSet controller's reconciles took over the
	// whole run at this size (those that ran to their end, from its log): it reconciles an
	// ApplicationSet with all its Applications at once, and requests a step's syncs at the end of
	// one. Nil in runs made before it was recorded.
	ApplicationSetReconcile *Percentiles `json:"applicationSetReconcile,omitempty"`
	// AgentWrites counts the simulated agents' status writes, and Redeliveries the sync requests
	// a cluster's Argo CD started twice over the whole run (each must start once).
	AgentWrites  int64 `json:"agentWrites"`
	Redeliveries int   `json:"redeliveries"`

	// Limit is the same scenarios at this size without the pull model: the same hub, ApplicationSet
	// controller and simulated syncs, no argocd-pull, the clusters' Argo CD syncing the hub
	// Applications themselves (simagent.Push). Its times are the limit for this machine. Nil in
	// runs made before it was measured, and in the limit itself.
	Limit *RolloutResult `json:"limit,omitempty"`
}

// Rollout is one revision reaching a set of Applications.
type Rollout struct {
	ApplicationSets int `json:"applicationSets"`
	Applications    int `json:"applications"`
	// Complete says every Application reached the revision within the scenario's patience.
	Complete bool `json:"complete"`
	// Seconds: from the commit (or the ApplicationSet's creation) until the last Application was
	// Synced and Healthy at the revision on the hub (Succeeded, as the ApplicationSet controller
	// requires to go on).
	Seconds float64 `json:"seconds"`
	// AgentsSeconds is the clusters' own share: the sync duration times the steps.
	AgentsSeconds float64 `json:"agentsSeconds"`
	// Ratio is Seconds / AgentsSeconds.
	Ratio float64 `json:"ratio"`
	// Steps: per RollingSync step, when its last Application was done; one entry without steps.
	Steps []Step `json:"steps"`
	// HubAddedPerStep summarises each step's length minus the sync duration: what the hub (the
	// ApplicationSet controller, argocd-pull, the apiserver, the agents' writes) added.
	HubAddedPerStep Percentiles `json:"hubAddedPerStep"`
	// CPU is what each process of the hub used meanwhile: on two cores, what bounds the rollout.
	// Nil in runs made before it was recorded.
	CPU *CPUShare `json:"cpu,omitempty"`
	// APIServerWrites counts the writes the apiserver answered meanwhile, by resource (with its
	// subresource) and verb ("applications PATCH"), and by resource those it stored in etcd
	// ("applications stored": a write that changes nothing is not stored), from its own metrics.
	// Nil in runs made before it was recorded.
	APIServerWrites map[string]float64 `json:"apiserverWrites,omitempty"`
	// ControllerRequests counts argocd-pull's own requests meanwhile, by HTTP method: its share
	// of APIServerWrites. Nil in runs made before it was recorded.
	ControllerRequests map[string]float64 `json:"controllerRequests,omitempty"`
	// ControllerRequestsByResource counts them by verb and resource ("patch applications",
	// "update manifestworks"), from argocd_pull_api_requests_total. Nil in runs made before it was
	// recorded.
	ControllerRequestsByResource map[string]float64 `json:"controllerRequestsByResource,omitempty"`
	// Reconciles are argocd-pull's reconciles meanwhile, by controller (propagation, appstatus,
	// report): how many, and their mean time queued and working, which says whether its own queues
	// hold up a step. Nil for the limit, and in runs made before it was recorded.
	Reconciles map[string]ReconcileTimes `json:"reconciles,omitempty"`
	// Per Application: RequestLag from the previous step done (the commit for the first) until the
	// ApplicationSet controller's sync request was on the hub Application; Delivery from that
	// request (without RollingSync: from the commit, the Applications syncing themselves) until the
	// cluster started the sync; Status from the sync's end on the cluster until
	// the hub Application showed it done.
	RequestLag Percentiles `json:"requestLag"`
	Delivery   Percentiles `json:"delivery"`
	Status     Percentiles `json:"status"`
	// SyncsPerApplication is the syncs of the revision the clusters started, per Application: 1
	// when each was asked once; more when the ApplicationSet controller asked a step's sync again
	// and the second request ran too.
	SyncsPerApplication float64 `json:"syncsPerApplication"`
	// FirstDelivery (a new ApplicationSet only): from its creation until each Application was on
	// its cluster.
	FirstDelivery *Percentiles `json:"firstDelivery,omitempty"`
	// FirstDeliveryFromCreation (a new ApplicationSet only): from each Application's creation on
	// the hub (the ApplicationSet controller creates them one by one) until it was on its cluster:
	// argocd-pull's and the agents' share of FirstDelivery. Nil in runs made before it was recorded.
	FirstDeliveryFromCreation *Percentiles `json:"firstDeliveryFromCreation,omitempty"`
	// ReportSeconds (without RollingSync): from the commit until the report showed every cluster
	// at the revision.
	ReportSeconds float64 `json:"reportSeconds,omitempty"`
}

// Step is one RollingSync step of a rollout.
type Step struct {
	Step         int     `json:"step"`
	Applications int     `json:"applications"`
	DoneSeconds  float64 `json:"doneSeconds"` // since the commit
	Seconds      float64 `json:"seconds"`     // since the previous step was done
	HubAdded     float64 `json:"hubAddedSeconds"`
}

// SecondCommit is a commit made mid-rollout: the new revision must go through every step again,
// in order, and a step done at the earlier revision never counts for it.
type SecondCommit struct {
	// StepsDoneBefore is how many steps had the first revision when the second was committed.
	StepsDoneBefore int `json:"stepsDoneBefore"`
	// Rollout is the second revision, from its commit.
	Rollout *Rollout `json:"rollout"`
	// OutOfOrder counts Applications whose sync of the second revision was requested before
	// every Application of the step before theirs was done at it; DoneWithoutSync those the hub
	// showed done at it before their cluster had synced it. Both must be 0.
	OutOfOrder      int `json:"outOfOrder"`
	DoneWithoutSync int `json:"doneWithoutSync"`
}

// FailingRollout is a revision that fails on the first step's clusters.
type FailingRollout struct {
	// FirstStepFailedSeconds: from the commit until the hub showed every Application of the first
	// step Failed.
	FirstStepFailedSeconds float64 `json:"firstStepFailedSeconds"`
	// WatchedSeconds: then the later steps were watched this long, and BeyondFirstStep counts
	// their Applications whose cluster started a sync of the failing revision (0: the rollout
	// stopped at the first step).
	WatchedSeconds  float64 `json:"watchedSeconds"`
	BeyondFirstStep int     `json:"beyondFirstStep"`
	// Fixed is the next revision, committed after it, rolled out through every step.
	Fixed *Rollout `json:"fixed,omitempty"`
}

/** tether's workflows: the only module a Worker's workflow bundle needs from tether. */
export {}

/**
 * The translator: admitted input snapshots -> one Istio output snapshot per admitted cluster,
 * plus a Gloo-shaped status per Gloo input resource.
 * Pure: no I/O, no clock, no randomness; clusters, resources and policies are visited in
 * sorted order, so equal inputs give byte-identical outputs (equal hashes) on every machine.
 */
import type { OutputValidator } from '../istio/istio-validator.ts';
import { translationSteps } from './pipeline.ts';
import { FRESH } from './translation-memo.ts';
import type { TranslationInput, TranslationResult } from './types.ts';

/**
 * Translates the admitted inputs. Every admitted cluster consumes what the workspaces it is in
 * own or import (with no Workspace defined: everything). Failures are isolated per Gloo
 * resource (see emit.ts): every admitted cluster gets an output. Each output's provenance is
 * every admitted (cluster, input hash) pair, and each output names its Gloo sources in the
 * `meshrelay.io/sources` annotation.
 */
export function translate(input: TranslationInput, validator: OutputValidator): TranslationResult {
  // The full recompute: the pipeline run to its end at once, reusing nothing.
  const steps = translationSteps(input, validator, FRESH);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

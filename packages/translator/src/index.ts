export {
  isCleanInputList,
  judgedClean,
  recordCleanInputs,
  validateInputResource,
  validateInputResources,
  type InputProblem,
  type InputValidationResult,
} from './gloo/input-validation.ts';
export { createIstioValidator, type IstioValidatorOptions, type OutputValidator } from './istio/istio-validator.ts';
export { IncrementalTranslator, type IncrementalTranslatorOptions } from './engine/incremental-translator.ts';
export { translate } from './engine/translate.ts';
export type {
  Approval,
  ClusterInfo,
  OutputRef,
  ProducedOutput,
  ResourceState,
  ResourceStatus,
  TranslationInput,
  TranslationProblem,
  TranslationResult,
} from './engine/types.ts';
export { DEFAULT_VIP_CIDR, allocateVips, virtualDestinationKeys } from './istio/vip-allocator.ts';
export { sameElements } from './engine/same-content.ts';

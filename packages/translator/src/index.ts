export { isCleanInputList, judgedClean, recordCleanInputs, validateInputResource, validateInputResources, type InputProblem, type InputValidationResult } from './input-validation.ts';
export { createIstioValidator, type IstioValidatorOptions, type OutputValidator } from './istio-validator.ts';
export { IncrementalTranslator, type IncrementalTranslatorOptions } from './incremental-translator.ts';
export { translate } from './translate.ts';
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
} from './types.ts';
export { DEFAULT_VIP_CIDR, allocateVips, virtualDestinationKeys } from './vip-allocator.ts';
export { sameElements } from './same-content.ts';

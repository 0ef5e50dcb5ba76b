// Exact shapes for Parley's own answers. The contract's schemas let extra fields through (the CLI and
// the conformance suite must accept other implementations that add some); Parley itself answers
// with exactly the fields of §2 and D-8…D-14, so a leaked internal field (`seq`, `deleted_at`) fails.
import { z } from 'zod';
import {
  ContentPart,
  DataSpec,
  DeletionResult,
  Item,
  JsonPatchOperation,
  ReferenceConversation,
  ReferenceConversationList,
  ReferenceErrorBody,
} from '../../src/contract/index.ts';

const exact = <S extends z.ZodRawShape>(shape: S) => z.strictObject(shape);

export const ExactConversation = exact(ReferenceConversation.shape);

/** D-14: each item type's fields, nothing more; content parts and patches too. */
const [MessageItem, FunctionCallItem, DataSpecItem] = Item.options;
export const ExactItem = z.discriminatedUnion('type', [
  exact({ ...MessageItem.shape, content: z.array(exact(ContentPart.shape)).nullable() }),
  exact(FunctionCallItem.shape),
  exact({ ...DataSpecItem.shape, data: exact({ ...DataSpec.shape, patch: exact(JsonPatchOperation.shape) }) }),
]);

export const ExactConversationWithItems = exact({ ...ReferenceConversation.shape, items: z.array(ExactItem) });
export const ExactConversationList = exact({ ...ReferenceConversationList.shape, data: z.array(ExactConversation) });
export const ExactDeletionResult = exact(DeletionResult.shape);
export const ExactErrorBody = exact({ error: exact(ReferenceErrorBody.shape.error.shape) });
